import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { type ItemFamily, itemFamilies, listedAttributes, runIndexes } from '../functions/adapters/dynamo/layout.js';

export interface StorageProps {
  /**
   * What happens to the table and bucket when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** Conversation memory and workflow state (DynamoDB) and the run workspaces (S3). */
export class Storage extends Construct {
  /** One table, item families by key prefix (`functions/adapters/dynamo/layout.ts`), with three indexes over run records. */
  public readonly table: dynamodb.TableV2;
  /** Workspaces under `workspaces/<runId>/`, large message bodies under `conversations/` and `runs/`. */
  public readonly bucket: s3.Bucket;

  constructor(scope: Construct, id: string, props: StorageProps = {}) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.table = new dynamodb.TableV2(this, 'Table', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billing: dynamodb.Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryptionV2.awsManagedKey(),
      timeToLiveAttribute: 'expiresAt',
      removalPolicy,
      globalSecondaryIndexes: Object.values(runIndexes).map((index) => ({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType.INCLUDE,
        nonKeyAttributes: listedAttributes,
      })),
    });

    const accessLogs = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy,
    });
    Validations.of(accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the access-log bucket itself; logging it to itself would loop.',
    });

    this.bucket = new s3.Bucket(this, 'Workspaces', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      versioned: true,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'workspaces/',
      lifecycleRules: [{ noncurrentVersionExpiration: Duration.days(30) }],
      removalPolicy,
    });
  }

  /** Read and append conversation items and large bodies: the inference and tool steps. */
  grantConversationMemory(grantee: iam.IGrantable): void {
    this.grantItems(grantee, ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query'], ['conversations']);
    this.grantObjects(grantee, 'conversations/*', ['s3:GetObject', 's3:PutObject']);
  }

  /** Read conversation items and large bodies, without writing: the approval function and the API. */
  grantConversationRead(grantee: iam.IGrantable): void {
    this.grantItems(grantee, ['dynamodb:GetItem', 'dynamodb:Query'], ['conversations']);
    this.grantObjects(grantee, 'conversations/*', ['s3:GetObject']);
  }

  /** Read the live text of answers being written (`live#<runId>`): the event stream. */
  grantLiveTextRead(grantee: iam.IGrantable): void {
    this.grantItems(grantee, ['dynamodb:Query'], ['live']);
  }

  /**
   * Approval records (`run#<runId>` / `approval#<toolUseId>`): `request` (open a request, store
   * the task token: the approval function), `settle` (read, deny on timeout: the tool function),
   * `decide` (list, read, record a decision: the API).
   */
  grantApprovals(grantee: iam.IGrantable, access: 'request' | 'settle' | 'decide'): void {
    const actions = {
      request: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
      settle: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      decide: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
    }[access];
    this.grantItems(grantee, actions, ['runs']);
  }

  /** A run's external tool catalog (`run#<runId>` / `tools`): `write` (list once: inference), `read` (the tool function). */
  grantToolCatalog(grantee: iam.IGrantable, access: 'read' | 'write'): void {
    // A large catalog's body lies under conversations/, which both functions reach already.
    this.grantItems(grantee, access === 'write' ? ['dynamodb:GetItem', 'dynamodb:PutItem'] : ['dynamodb:GetItem'], ['runs']);
  }

  /**
   * Run records: `read`, `update` (read and count steps: inference), `updateOnly` (store a plan:
   * the tool function), `readWrite` (create and finish: the intake).
   */
  grantRunRecords(grantee: iam.IGrantable, access: 'read' | 'update' | 'updateOnly' | 'readWrite'): void {
    const actions = {
      read: ['dynamodb:GetItem'],
      update: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      updateOnly: ['dynamodb:UpdateItem'],
      readWrite: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    }[access];
    this.grantItems(grantee, actions, ['runs']);
    if (access === 'updateOnly') return;
    this.grantObjects(grantee, 'runs/*', access === 'readWrite' ? ['s3:GetObject', 's3:PutObject'] : ['s3:GetObject']);
  }

  /** Idempotency keys and session locks (the intake's conditional writes), and its count of an owner's running runs. */
  grantIntakeRecords(grantee: iam.IGrantable): void {
    this.grantItems(grantee, ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], ['idempotency', 'sessions']);
    this.grantIndexQuery(grantee, ['running']);
  }

  /** Free a session lock whose run has ended (the execution-ended function): a conditional update, nothing more. */
  grantSessionRelease(grantee: iam.IGrantable): void {
    this.grantItems(grantee, ['dynamodb:UpdateItem'], ['sessions']);
  }

  /** List runs by owner or tenant (`GET /runs`): queries of the run indexes only. */
  grantRunListing(grantee: iam.IGrantable): void {
    this.grantIndexQuery(grantee, ['byOwner', 'byTenant', 'running']);
  }

  /** Read (and write) and list workspace files: only keys under `workspaces/` (invariant 7, docs/ARCHITECTURE.md). */
  grantWorkspaces(grantee: iam.IGrantable, access: 'read' | 'readWrite'): void {
    this.grantObjects(grantee, 'workspaces/*', access === 'read' ? ['s3:GetObject'] : ['s3:GetObject', 's3:PutObject']);
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:ListBucket'],
      resourceArns: [this.bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': ['workspaces/*'] } },
    });
  }

  /** Item actions on the table, only on the items whose partition key starts with one of `families`. */
  private grantItems(grantee: iam.IGrantable, actions: string[], families: ItemFamily[]): void {
    iam.Grant.addToPrincipal({ grantee, actions, resourceArns: [this.table.tableArn], conditions: leadingKeys(families) });
  }

  /** `Query` on the run indexes, only in partitions of `families`. */
  private grantIndexQuery(grantee: iam.IGrantable, families: ItemFamily[]): void {
    const indexArns = Object.values(runIndexes)
      .filter((index) => families.includes(index.family))
      .map((index) => `${this.table.tableArn}/index/${index.name}`);
    iam.Grant.addToPrincipal({ grantee, actions: ['dynamodb:Query'], resourceArns: indexArns, conditions: leadingKeys(families) });
  }

  private grantObjects(grantee: iam.IGrantable, prefix: string, actions: string[]): void {
    iam.Grant.addToPrincipal({ grantee, actions, resourceArns: [this.bucket.arnForObjects(prefix)] });
    const bucketId = Stack.of(this).getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket);
    const principal = grantee.grantPrincipal;
    if (!Construct.isConstruct(principal)) return;
    Validations.of(principal).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${prefix}]`,
      reason: `Object keys under ${prefix.replace('/*', '/')} are created at run time; the grant covers that prefix only.`,
    });
  }
}

/** An IAM condition: every partition key the request touches starts with one of the families' prefixes. */
function leadingKeys(families: ItemFamily[]): Record<string, Record<string, string[]>> {
  return { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': families.map((family) => `${itemFamilies[family]}*`) } };
}
