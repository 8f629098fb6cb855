import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { type ItemFamily, itemFamilies, listedAttributes, runIndexes } from '../functions/adapters/dynamo/layout.js';
import { eitherExistingOrProps, sameEnvironment, tableLayoutProblems } from './existing-resources.js';
import { acknowledgeWildcardResource } from './wildcard-findings.js';

/** What may be changed of the table the construct creates: never its keys, indexes or TTL attribute, which the code relies on. */
export interface StepwiseTableProps {
  /**
   * What happens to the table when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * How the table is encrypted at rest. With a customer managed key, every function and state
   * machine that reads or writes the table is granted the key's use (read: `kms:Decrypt`,
   * `kms:DescribeKey`; write also `kms:Encrypt`, `kms:GenerateDataKey`, `kms:ReEncryptFrom`, `kms:ReEncryptTo`);
   * the stack then needs an explicit Region, as a `TableV2` sets that key per replica.
   * @default TableEncryptionV2.awsManagedKey()
   */
  readonly encryption?: dynamodb.TableEncryptionV2;
  /**
   * Point-in-time recovery (cdk-nag's AwsSolutions-DDB3 reports a table without it).
   * @default { pointInTimeRecoveryEnabled: true }
   */
  readonly pointInTimeRecoverySpecification?: dynamodb.PointInTimeRecoverySpecification;
  /**
   * Whether the table refuses to be deleted, by the stack or anyone else.
   * @default false
   */
  readonly deletionProtection?: boolean;
  /**
   * The table class.
   * @default TableClass.STANDARD
   */
  readonly tableClass?: dynamodb.TableClass;
}

/** What may be changed of the workspace bucket the construct creates. */
export interface StepwiseBucketProps {
  /**
   * What happens to the bucket (and its access-log bucket) when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Where the bucket's server access logs go, e.g. your account's central log bucket; none is then created.
   * @default a new access-log bucket beside it (SSL only, logs kept 90 days)
   */
  readonly serverAccessLogsBucket?: s3.IBucket;
  /**
   * The key prefix of the access logs.
   * @default 'workspaces/'
   */
  readonly serverAccessLogsPrefix?: string;
}

/** Where Stepwise keeps its state: a table and a bucket it creates, or your own. */
export interface StorageProps {
  /**
   * Your own table instead of a new one (`dynamodb.TableV2` or `Table`, or one imported with
   * `TableV2.fromTableName`/`fromTableAttributes`). It must have the layout of
   * `functions/adapters/dynamo/layout.ts`: string partition key `pk` and sort key `sk`; the global
   * secondary indexes `runs-by-owner` (`ownerKey`), `runs-by-tenant` (`tenantKey`) and
   * `running-by-owner` (`runningKey`), each with the string sort key `listKey` and projecting
   * (INCLUDE) `runId`, `mode`, `goalPreview`, `status`, `phase`, `createdAt`, `updatedAt`,
   * `estimatedCostUsd`, `approvals`, `owner`, or ALL; time to live on `expiresAt`. It must be in
   * the stack's account and Region. Stepwise's items all start with its own key prefixes (`conv#`,
   * `run#`, `idem#`, `session#`, `spend#`, `live#`, `agent#`, and `owner#`, `tenant#`, `running#`
   * in the indexes), and its functions may touch only those: the table can hold other items too.
   *
   * A table created in this app is checked at synth; an imported one cannot be (its key schema
   * is not in the template), so a wrong layout shows only when runs fail. If it is encrypted with
   * a customer managed key, import it with `fromTableAttributes({ encryptionKey })` so its use is
   * granted. The construct changes nothing of the table: no removal policy, backups or indexes.
   * @default a new `TableV2` with that layout, on demand, point-in-time recovery, AWS managed key, retained on delete
   */
  readonly existingTableObj?: dynamodb.ITable;
  /**
   * Adjusts the table the construct creates; not with `existingTableObj`.
   * @default {} (the defaults of each prop)
   */
  readonly tableProps?: StepwiseTableProps;
  /**
   * Your own bucket for run workspaces instead of a new one. Stepwise writes only under its key
   * prefixes: `workspaces/<runId>/` (tool files), `conversations/` and `runs/` (large message
   * bodies and goals); the workspace role and the per-run session policy of tool calls cover
   * `workspaces/` alone. It must be in the stack's account and Region and encrypted with SSE-S3 or
   * the AWS managed key: a customer managed key is refused, since a tool call's session policy
   * grants S3 actions only. The construct adds no bucket policy, logging, versioning or lifecycle
   * rule to a bucket it did not create: enforce SSL and block public access on it yourself.
   * @default a new bucket: SSE-S3, SSL only, public access blocked, versioned (old versions kept 30 days), access logs in a bucket beside it, retained on delete
   */
  readonly existingBucketObj?: s3.IBucket;
  /**
   * Adjusts the bucket the construct creates; not with `existingBucketObj`.
   * @default {} (the defaults of each prop)
   */
  readonly bucketProps?: StepwiseBucketProps;
}

/** The KMS actions a table encrypted with a customer managed key asks of its readers, and of its writers. */
const tableKeyActions = {
  read: ['kms:Decrypt', 'kms:DescribeKey'],
  write: ['kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:ReEncryptFrom', 'kms:ReEncryptTo'],
};

/** Conversation memory and workflow state (DynamoDB) and the run workspaces (S3): created, or your own. */
export class Storage extends Construct {
  /** One table, item families by key prefix (`functions/adapters/dynamo/layout.ts`), with three indexes over run records. */
  public readonly table: dynamodb.ITable;
  /** Workspaces under `workspaces/<runId>/`, large message bodies under `conversations/` and `runs/`. */
  public readonly bucket: s3.IBucket;

  constructor(scope: Construct, id: string, props: StorageProps = {}) {
    super(scope, id);
    eitherExistingOrProps(['existingTableObj', props.existingTableObj], ['tableProps', props.tableProps]);
    eitherExistingOrProps(['existingBucketObj', props.existingBucketObj], ['bucketProps', props.bucketProps]);
    if (props.existingTableObj) {
      sameEnvironment(this, 'existingTableObj', props.existingTableObj);
      // Read when the app is synthesized, not now: indexes may still be added to the table after it is passed.
      const table = props.existingTableObj;
      this.node.addValidation({
        validate: () => tableLayoutProblems(table).map((problem) => `existingTableObj does not have the layout Stepwise uses: ${problem}.`),
      });
    }
    if (props.existingBucketObj) {
      sameEnvironment(this, 'existingBucketObj', props.existingBucketObj);
      if (props.existingBucketObj.encryptionKey) {
        throw new Error(
          'existingBucketObj is encrypted with a customer managed KMS key: tool calls reach workspaces with a per-run session policy that grants S3 actions only. Use SSE-S3 or the AWS managed key.',
        );
      }
    }
    this.table = props.existingTableObj ?? this.createTable(props.tableProps ?? {});
    this.bucket = props.existingBucketObj ?? this.createBucket(props.bucketProps ?? {});
  }

  private createTable(props: StepwiseTableProps): dynamodb.TableV2 {
    return new dynamodb.TableV2(this, 'Table', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billing: dynamodb.Billing.onDemand(),
      pointInTimeRecoverySpecification: props.pointInTimeRecoverySpecification ?? { pointInTimeRecoveryEnabled: true },
      encryption: props.encryption ?? dynamodb.TableEncryptionV2.awsManagedKey(),
      timeToLiveAttribute: 'expiresAt',
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      ...(props.deletionProtection !== undefined ? { deletionProtection: props.deletionProtection } : {}),
      ...(props.tableClass ? { tableClass: props.tableClass } : {}),
      globalSecondaryIndexes: Object.values(runIndexes).map((index) => ({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType.INCLUDE,
        nonKeyAttributes: listedAttributes,
      })),
    });
  }

  private createBucket(props: StepwiseBucketProps): s3.Bucket {
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    return new s3.Bucket(this, 'Workspaces', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      versioned: true,
      serverAccessLogsBucket: props.serverAccessLogsBucket ?? this.createAccessLogs(removalPolicy),
      serverAccessLogsPrefix: props.serverAccessLogsPrefix ?? 'workspaces/',
      lifecycleRules: [{ noncurrentVersionExpiration: Duration.days(30) }],
      removalPolicy,
    });
  }

  private createAccessLogs(removalPolicy: RemovalPolicy): s3.Bucket {
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
    return accessLogs;
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

  /**
   * Write a fork's copy of conversation items (the API): conditional puts only. No S3 write: the
   * copies name the same large bodies, which are written once and never change.
   */
  grantConversationCopy(grantee: iam.IGrantable): void {
    this.grantItems(grantee, ['dynamodb:PutItem'], ['conversations']);
  }

  /**
   * Approval records (`run#<runId>` / `approval#<toolUseId>`): `request` (open a request, store
   * the task token: the approval function), `settle` (read, deny on timeout: the tool function),
   * `decide` (list, read, record a decision: the API), `read` (list and read: the event stream).
   */
  grantApprovals(grantee: iam.IGrantable, access: 'request' | 'settle' | 'decide' | 'read'): void {
    const actions = {
      request: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
      settle: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      decide: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      read: ['dynamodb:GetItem', 'dynamodb:Query'],
    }[access];
    this.grantItems(grantee, actions, ['runs']);
  }

  /** A run's external tool catalog (`run#<runId>` / `tools`): `write` (list once: inference), `read` (the tool function). */
  grantToolCatalog(grantee: iam.IGrantable, access: 'read' | 'write'): void {
    // A large catalog's body lies under conversations/, which both functions reach already.
    this.grantItems(grantee, access === 'write' ? ['dynamodb:GetItem', 'dynamodb:PutItem'] : ['dynamodb:GetItem'], ['runs']);
  }

  /**
   * The versions of agent definitions runs follow (`agent#<name>` / `v#<version>`): `write` (store
   * a run's agents once per version, with a conditional put: the functions that create runs, the
   * API, the intake and the stream), `read` (the version a run recorded: the inference and tool steps).
   */
  grantAgentDefinitions(grantee: iam.IGrantable, access: 'read' | 'write'): void {
    this.grantItems(grantee, access === 'write' ? ['dynamodb:GetItem', 'dynamodb:PutItem'] : ['dynamodb:GetItem'], ['agents']);
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

  /**
   * Live text (`live#<runId>`, written whole while the model generates): `write` (the inference
   * function), `read` (query a run's attempts: the event stream).
   */
  grantLiveText(grantee: iam.IGrantable, access: 'read' | 'write'): void {
    this.grantItems(grantee, access === 'write' ? ['dynamodb:PutItem'] : ['dynamodb:Query'], ['live']);
  }

  /** Idempotency keys, session locks and the running-runs quota's slots (the intake's conditional writes; a slot is read with its owner's others). */
  grantIntakeRecords(grantee: iam.IGrantable): void {
    this.grantItems(grantee, ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], ['idempotency', 'sessions']);
    this.grantItems(grantee, ['dynamodb:Query', 'dynamodb:UpdateItem'], ['slots']);
  }

  /** The slots of each caller's open event streams (`stream#`; the stream function): read one caller's, take and give back one. */
  grantStreamSlots(grantee: iam.IGrantable): void {
    this.grantItems(grantee, ['dynamodb:Query', 'dynamodb:UpdateItem'], ['streams']);
  }

  /** Free a session lock whose run has ended (the execution-ended function): a conditional update, nothing more. */
  grantSessionRelease(grantee: iam.IGrantable): void {
    this.grantItems(grantee, ['dynamodb:UpdateItem'], ['sessions']);
  }

  /**
   * The daily spend of callers (`spend#<ownerKey>#<day>#<shard>`): `read` (sum a day: the intake and the
   * API refuse runs once it is spent), `record` (also copy a run's cost into it: inference).
   */
  grantSpend(grantee: iam.IGrantable, access: 'read' | 'record'): void {
    this.grantItems(grantee, access === 'record' ? ['dynamodb:Query', 'dynamodb:UpdateItem'] : ['dynamodb:Query'], ['spend']);
  }

  /**
   * Schedules (docs/schedules.md): `manage` creates, lists, changes and deletes them (the API);
   * `fire` reads one and records its runs and skips (the intake).
   */
  grantSchedules(grantee: iam.IGrantable, access: 'manage' | 'fire'): void {
    const actions = access === 'manage' ? ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:Query'] : ['dynamodb:GetItem', 'dynamodb:UpdateItem'];
    this.grantItems(grantee, actions, ['schedules']);
  }

  /**
   * Deployed evals' records (`eval#<ownerKey>`) and documents (`evals/`): `api` (record, read, list
   * and end one; write a suite, read a report: the API), `finish` (read and end a record, read and
   * write an eval's documents: the eval steps).
   */
  grantEvals(grantee: iam.IGrantable, access: 'api' | 'finish'): void {
    const actions = access === 'api' ? ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'] : ['dynamodb:GetItem', 'dynamodb:UpdateItem'];
    this.grantItems(grantee, actions, ['evals']);
    this.grantObjects(grantee, 'evals/*', ['s3:GetObject', 's3:PutObject']);
  }

  /**
   * List runs by owner or tenant (`GET /runs`): queries of the run indexes, and one BatchGetItem of
   * a page's running runs' records for their live cost (functions/adapters/dynamo/run-listing.ts).
   */
  grantRunListing(grantee: iam.IGrantable): void {
    this.grantIndexQuery(grantee, ['byOwner', 'byTenant', 'running']);
    this.grantItems(grantee, ['dynamodb:BatchGetItem'], ['runs']);
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

  /**
   * Memory files (docs/memory.md): only keys under `memories/`. `readDelete` for the API's routes;
   * `readWriteDelete` for the role tools assume, each call narrowed to one scope by a session policy.
   */
  grantMemories(grantee: iam.IGrantable, access: 'readDelete' | 'readWriteDelete'): void {
    this.grantObjects(grantee, 'memories/*', access === 'readDelete' ? ['s3:GetObject', 's3:DeleteObject'] : ['s3:GetObject', 's3:PutObject', 's3:DeleteObject']);
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:ListBucket'],
      resourceArns: [this.bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': ['memories/*'] } },
    });
  }

  /**
   * The use of the table's customer managed key, if it has one: `read` or `write`. Every item grant
   * below adds it; the orchestrator's direct DynamoDB calls need it too.
   */
  grantTableKey(grantee: iam.IGrantable, access: 'read' | 'write'): void {
    this.table.encryptionKey?.grant(grantee, ...tableKeyActions[access]);
  }

  /** Item actions on the table, only on the items whose partition key starts with one of `families`. */
  private grantItems(grantee: iam.IGrantable, actions: string[], families: ItemFamily[]): void {
    iam.Grant.addToPrincipal({ grantee, actions, resourceArns: [this.table.tableArn], conditions: leadingKeys(families) });
    this.grantTableKey(grantee, actions.some((action) => writeActions.has(action)) ? 'write' : 'read');
  }

  /** `Query` on the run indexes, only in partitions of `families`. */
  private grantIndexQuery(grantee: iam.IGrantable, families: ItemFamily[]): void {
    const indexArns = Object.values(runIndexes)
      .filter((index) => families.includes(index.family))
      .map((index) => `${this.table.tableArn}/index/${index.name}`);
    iam.Grant.addToPrincipal({ grantee, actions: ['dynamodb:Query'], resourceArns: indexArns, conditions: leadingKeys(families) });
    this.grantTableKey(grantee, 'read');
  }

  private grantObjects(grantee: iam.IGrantable, prefix: string, actions: string[]): void {
    const arn = this.bucket.arnForObjects(prefix);
    iam.Grant.addToPrincipal({ grantee, actions, resourceArns: [arn] });
    const principal = grantee.grantPrincipal;
    if (!Construct.isConstruct(principal)) return;
    acknowledgeWildcardResource(principal, arn, `Object keys under ${prefix.replace('/*', '/')} are created at run time; the grant covers that prefix only.`);
  }
}

/** The item actions that write, whose grants carry the table key's write actions. */
const writeActions = new Set(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']);

/** An IAM condition: every partition key the request touches starts with one of the families' prefixes. */
export function leadingKeys(families: ItemFamily[]): Record<string, Record<string, string[]>> {
  return { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': families.map((family) => `${itemFamilies[family]}*`) } };
}
