/** StepwiseAgents with your own table, bucket and event bus, or with its own adjusted; and the combinations refused up front. */
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { listedAttributes, runIndexes } from '../../functions/adapters/dynamo/layout.js';
import { StepwiseAgents, type StepwiseAgentsProps } from '../../lib/stepwise-agents.js';
import { synthesize } from '../support/synth.js';
import { type FunctionResource, type Statement, functionsOf, logicalIdOf, stepwiseStack } from '../support/template.js';

const noBundling = { 'aws:cdk:bundling-stacks': [] };

/** How a table, bucket and bus appear in one template, to be renamed alike in another. */
interface Names {
  table: { name: string; arn: string };
  bucket: { name: string; arn: string };
  bus: { name: string; arn: string };
}

/**
 * Every IAM policy's statements, their resources flattened as cdk-nag writes them and the table,
 * bucket and bus renamed, so the grants of two deployments compare whatever the resources' ARNs.
 */
function grants(template: Template, names: Names): Record<string, Statement[]> {
  const tableByName = `arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/${names.table.name}`;
  const renames: [string, string][] = [
    [tableByName, 'TABLE'],
    [names.table.arn, 'TABLE'],
    [names.bucket.arn, 'BUCKET'],
    [names.bus.arn, 'BUS'],
    [names.table.name, 'TABLE_NAME'],
    [names.bucket.name, 'BUCKET_NAME'],
    [names.bus.name, 'BUS_NAME'],
  ];
  const rename = (resource: unknown) => renames.reduce((text, [from, to]) => text.split(from).join(to), flattenCfnReference(resource));
  return Object.fromEntries(
    Object.entries(template.findResources('AWS::IAM::Policy')).map(([id, policy]) => {
      const statements = (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement;
      return [id, statements.map((st) => ({ ...st, Resource: [st.Resource].flat().map(rename) }))];
    }),
  );
}

/** The names the default stack gives its own table, bucket and bus. */
function createdNames(template: Template): Names {
  const table = logicalIdOf(template, 'StorageTable', 'AWS::DynamoDB::GlobalTable');
  const bucket = logicalIdOf(template, 'StorageWorkspaces', 'AWS::S3::Bucket');
  const bus = logicalIdOf(template, 'Bus', 'AWS::Events::EventBus');
  return {
    table: { name: `<${table}>`, arn: `<${table}.Arn>` },
    bucket: { name: `<${bucket}>`, arn: `<${bucket}.Arn>` },
    bus: { name: `<${bus}>`, arn: `<${bus}.Arn>` },
  };
}

/** A team's table with the layout Stepwise documents, indexes added by `addIndexes` (now, or later). */
function teamTable(scope: Stack, options: { indexes?: boolean } = {}): dynamodb.TableV2 {
  const table = new dynamodb.TableV2(scope, 'TeamTable', {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
    timeToLiveAttribute: 'expiresAt',
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  });
  if (options.indexes ?? true) addRunIndexes(table);
  return table;
}

function addRunIndexes(table: dynamodb.TableV2): void {
  for (const index of Object.values(runIndexes)) {
    table.addGlobalSecondaryIndex({
      indexName: index.name,
      partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType.INCLUDE,
      nonKeyAttributes: listedAttributes,
    });
  }
}

/** A new construct in a fresh stack, for what must fail before anything is synthesized. */
function agentsIn(props: (stack: Stack) => StepwiseAgentsProps, env?: { account: string; region: string }): StepwiseAgents {
  const stack = new Stack(new App({ context: noBundling }), 'Mine', env ? { env } : {});
  return new StepwiseAgents(stack, 'Agents', props(stack));
}

/** The lines of the error synthesis fails with; none when it succeeds. */
function synthesisErrors(app: App): string[] {
  try {
    app.synth();
    return [];
  } catch (error) {
    return (error instanceof Error ? error.message : String(error)).split('\n');
  }
}

describe('StepwiseAgents with a table, bucket and bus of your own', () => {
  let template: Template;
  let violations: string[];
  let agents: StepwiseAgents | undefined;

  beforeAll(() => {
    ({ template, violations } = synthesize(
      (app) => {
        // Under the id "Default" in a stack named like the default one, so every policy keeps its logical id.
        const stack = new Stack(app, 'Stepwise');
        agents = new StepwiseAgents(stack, 'Default', {
          existingTableObj: dynamodb.TableV2.fromTableName(stack, 'TeamTable', 'team-table'),
          existingBucketObj: s3.Bucket.fromBucketName(stack, 'TeamBucket', 'team-bucket'),
          existingEventBusObj: events.EventBus.fromEventBusName(stack, 'TeamBus', 'team-bus'),
        });
        return stack;
      },
      { nag: true },
    ));
  }, 120_000);

  it('creates no table, bucket or bus of its own, and exposes yours', () => {
    for (const type of ['AWS::DynamoDB::GlobalTable', 'AWS::DynamoDB::Table', 'AWS::S3::Bucket', 'AWS::Events::EventBus']) template.resourceCountIs(type, 0);
    const stack = Stack.of(agents as StepwiseAgents);
    expect(stack.resolve(agents?.table.tableName)).toBe('team-table');
    expect(stack.resolve(agents?.bucket.bucketName)).toBe('team-bucket');
    expect(stack.resolve(agents?.bus.eventBusName)).toBe('team-bus');
  });

  it('grants every function and state machine the same statements, with the same conditions, on your resources', () => {
    const existing: Names = {
      table: { name: 'team-table', arn: 'arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/team-table' },
      bucket: { name: 'team-bucket', arn: 'arn:<AWS::Partition>:s3:::team-bucket' },
      bus: { name: 'team-bus', arn: 'arn:<AWS::Partition>:events:<AWS::Region>:<AWS::AccountId>:event-bus/team-bus' },
    };
    const { template: created } = stepwiseStack();
    const ours = grants(template, existing);
    expect(Object.keys(ours).length).toBeGreaterThan(5);
    expect(ours).toEqual(grants(created, createdNames(created)));
    // The renaming hides nothing: the table's ARN itself is in the grants.
    expect(JSON.stringify(template.findResources('AWS::IAM::Policy'))).toContain(':table/team-table');
  });

  it('tells every function your table and bucket, and puts the intake rule on your bus', () => {
    const told = functionsOf(template).filter((fn: FunctionResource) => fn.Properties.Environment.Variables.STEPWISE_TABLE !== undefined);
    expect(told).toHaveLength(8);
    for (const fn of told) {
      expect(fn.Properties.Environment.Variables).toMatchObject({ STEPWISE_TABLE: 'team-table', STEPWISE_BUCKET: 'team-bucket' });
    }
    template.hasResourceProperties('AWS::Events::Rule', { EventBusName: 'team-bus', EventPattern: { 'detail-type': ['Stepwise Run Requested'] } });
  });

  it('passes cdk-nag AwsSolutionsChecks', () => {
    expect(violations).toEqual([]);
  });
});

describe('StepwiseAgents with resources from another stack of the app', () => {
  it('takes them through exports, checks the table at synth and stays clean under cdk-nag', () => {
    const { template, violations } = synthesize(
      (app) => {
        const data = new Stack(app, 'Data');
        const bucket = new s3.Bucket(data, 'Files', {
          encryption: s3.BucketEncryption.S3_MANAGED,
          blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
          enforceSSL: true,
          serverAccessLogsPrefix: 'access-logs/',
        });
        const bus = new events.EventBus(data, 'Bus', { eventBusName: 'team-bus' });
        const stack = new Stack(app, 'Agents');
        new StepwiseAgents(stack, 'Agents', { existingTableObj: teamTable(data), existingBucketObj: bucket, existingEventBusObj: bus });
        return stack;
      },
      { nag: true },
    );
    expect(violations).toEqual([]);
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 0);
    template.resourceCountIs('AWS::S3::Bucket', 0);
    const workspaceGrant = Object.entries(template.findResources('AWS::IAM::Policy')).find(([id]) => id.startsWith('AgentsWorkspaceRole'))?.[1];
    expect(JSON.stringify(workspaceGrant)).toMatch(/Fn::ImportValue.*\/workspaces\/\*/);
  }, 120_000);
});

describe('StepwiseAgents adjusting what it creates', () => {
  it('applies tableProps, bucketProps and eventBusProps, and stays clean under cdk-nag', () => {
    const { template, violations } = synthesize(
      (app) => {
        const stack = new Stack(app, 'Mine');
        const key = new kms.Key(stack, 'TeamKey', { enableKeyRotation: true });
        new StepwiseAgents(stack, 'Agents', {
          tableProps: { removalPolicy: RemovalPolicy.DESTROY, deletionProtection: true, tableClass: dynamodb.TableClass.STANDARD_INFREQUENT_ACCESS },
          bucketProps: { removalPolicy: RemovalPolicy.DESTROY, serverAccessLogsBucket: s3.Bucket.fromBucketName(stack, 'Logs', 'team-logs'), serverAccessLogsPrefix: 'stepwise/' },
          eventBusProps: { eventBusName: 'team-events', kmsKey: key, description: 'Stepwise runs' },
        });
        return stack;
      },
      { nag: true },
    );
    expect(violations).toEqual([]);
    template.hasResource('AWS::DynamoDB::GlobalTable', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
        Replicas: [
          Match.objectLike({ DeletionProtectionEnabled: true, TableClass: 'STANDARD_INFREQUENT_ACCESS', PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } }),
        ],
      }),
    });
    // The workspace bucket alone: its logs go to the team's bucket.
    template.resourceCountIs('AWS::S3::Bucket', 1);
    template.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ LoggingConfiguration: { DestinationBucketName: 'team-logs', LogFilePrefix: 'stepwise/' } }),
    });
    const keyArn = { 'Fn::GetAtt': [logicalIdOf(template, 'TeamKey', 'AWS::KMS::Key'), 'Arn'] };
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'team-events', KmsKeyIdentifier: keyArn, Description: 'Stepwise runs' });
  }, 120_000);

  it('grants the use of a customer managed table key to every function and state machine that touches the table, and to no one else', () => {
    const { template } = synthesize((app) => {
      // A TableV2 sets its key per replica, so the stack's Region must be known.
      const stack = new Stack(app, 'Mine', { env: { account: '111111111111', region: 'eu-west-1' } });
      const key = new kms.Key(stack, 'TeamKey', { enableKeyRotation: true });
      new StepwiseAgents(stack, 'Agents', { tableProps: { encryption: dynamodb.TableEncryptionV2.customerManagedKey(key) } });
      return stack;
    });
    const keyArn = { 'Fn::GetAtt': [logicalIdOf(template, 'TeamKey', 'AWS::KMS::Key'), 'Arn'] };
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
      Replicas: [Match.objectLike({ SSESpecification: { KMSMasterKeyId: keyArn } })],
    });
    const policies = Object.entries(template.findResources('AWS::IAM::Policy')).map(([id, p]) => [id, JSON.stringify(p)] as const);
    const touchTable = policies.filter(([, json]) => json.includes('"dynamodb:')).map(([id]) => id);
    const useKey = policies.filter(([, json]) => json.includes('"kms:Decrypt"') && json.includes(JSON.stringify(keyArn))).map(([id]) => id);
    expect(touchTable.length).toBeGreaterThan(5);
    expect(useKey).toEqual(touchTable);
    expect(touchTable.some((id) => id.startsWith('AgentsOrchestratorStateMachineRole'))).toBe(true);
  }, 120_000);
});

describe('StepwiseAgents refuses up front', () => {
  it.each([
    ['existingTableObj', 'tableProps', (s: Stack) => ({ existingTableObj: dynamodb.TableV2.fromTableName(s, 'T', 't'), tableProps: { deletionProtection: true } })],
    ['existingBucketObj', 'bucketProps', (s: Stack) => ({ existingBucketObj: s3.Bucket.fromBucketName(s, 'B', 'team-bucket'), bucketProps: { removalPolicy: RemovalPolicy.DESTROY } })],
    ['existingEventBusObj', 'eventBusProps', (s: Stack) => ({ existingEventBusObj: events.EventBus.fromEventBusName(s, 'E', 'e'), eventBusProps: { eventBusName: 'x' } })],
  ])('%s together with %s, naming both', (existing, adjust, props) => {
    expect(() => agentsIn(props)).toThrow(`${existing} and ${adjust} cannot both be given`);
  });

  it('a table, bucket or bus in another account or Region than the stack', () => {
    const env = { account: '111111111111', region: 'eu-west-1' };
    expect(() => agentsIn((s) => ({ existingTableObj: dynamodb.TableV2.fromTableArn(s, 'T', 'arn:aws:dynamodb:us-east-1:111111111111:table/team') }), env)).toThrow(
      'existingTableObj is in Region us-east-1 and the stack in eu-west-1',
    );
    expect(() => agentsIn((s) => ({ existingBucketObj: s3.Bucket.fromBucketAttributes(s, 'B', { bucketName: 'team', account: '222222222222' }) }), env)).toThrow(
      'existingBucketObj is in account 222222222222 and the stack in 111111111111',
    );
    expect(() => agentsIn((s) => ({ existingEventBusObj: events.EventBus.fromEventBusArn(s, 'E', 'arn:aws:events:eu-west-1:222222222222:event-bus/team') }), env)).toThrow(
      'existingEventBusObj is in account 222222222222',
    );
    // The same account and Region pass.
    expect(() => agentsIn((s) => ({ existingTableObj: dynamodb.TableV2.fromTableArn(s, 'T', 'arn:aws:dynamodb:eu-west-1:111111111111:table/team') }), env)).not.toThrow();
  });

  it('a bucket encrypted with a customer managed key, which tool calls could not use', () => {
    const existingBucketObj = (s: Stack) => s3.Bucket.fromBucketAttributes(s, 'B', { bucketName: 'team', encryptionKey: kms.Key.fromKeyArn(s, 'K', 'arn:aws:kms:eu-west-1:111111111111:key/team') });
    expect(() => agentsIn((s) => ({ existingBucketObj: existingBucketObj(s) }))).toThrow('existingBucketObj is encrypted with a customer managed KMS key');
  });

  it("a new bus named 'default'", () => {
    expect(() => agentsIn(() => ({ eventBusProps: { eventBusName: 'default' } }))).toThrow("eventBusProps.eventBusName cannot be 'default'");
  });

  it('at synth, a table of the app without the layout, naming each thing it lacks', () => {
    const app = new App({ context: noBundling });
    const stack = new Stack(app, 'Mine');
    const table = new dynamodb.TableV2(stack, 'TeamTable', { partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING } });
    new StepwiseAgents(stack, 'Agents', { existingTableObj: table });
    const problems = synthesisErrors(app).filter((line) => line.includes('existingTableObj'));
    expect(problems.map((line) => line.replace(/^.*existingTableObj does not have the layout Stepwise uses: /, ''))).toEqual([
      'the table must be keyed by the strings pk (partition) and sk (sort).',
      'the global secondary index runs-by-owner is missing.',
      'the global secondary index runs-by-tenant is missing.',
      'the global secondary index running-by-owner is missing.',
      'time to live must be on the attribute expiresAt.',
    ]);
  });

  it('not a table whose indexes are added after it was passed: its layout is read at synth', () => {
    const app = new App({ context: noBundling });
    const stack = new Stack(app, 'Mine');
    const table = teamTable(stack, { indexes: false });
    new StepwiseAgents(stack, 'Agents', { existingTableObj: table });
    addRunIndexes(table);
    expect(app.synth().getStackByName('Mine').template).toHaveProperty('Resources');
  });
});
