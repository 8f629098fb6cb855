import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { listedAttributes } from '../../functions/adapters/dynamo/layout.js';
import { type Statement, stepwiseStack, withoutHash } from '../support/template.js';

const { template } = stepwiseStack();

describe('Storage', () => {
  it('keeps memory in a DynamoDB table with point-in-time recovery', () => {
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      Replicas: [Match.objectLike({ PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } })],
    });
  });

  it('keeps workspaces in an encrypted, private, SSL-only bucket', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      VersioningConfiguration: { Status: 'Enabled' },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });

  it('keeps the logical ids and properties of a stack deployed before resources could be brought, so nothing stateful is replaced', () => {
    const resources = (type: string) => template.findResources(type) as Record<string, { Properties: unknown; DeletionPolicy?: string }>;
    expect(Object.keys(resources('AWS::DynamoDB::GlobalTable'))).toEqual(['StorageTableB43FDCE7']);
    expect(Object.keys(resources('AWS::S3::Bucket')).sort()).toEqual(['StorageAccessLogs96FB524C', 'StorageWorkspacesEA25CA2E']);
    expect(Object.keys(resources('AWS::Events::EventBus'))).toEqual(['BusEA82B648']);

    const index = (name: string, partitionKey: string) => ({
      IndexName: name,
      KeySchema: [
        { AttributeName: partitionKey, KeyType: 'HASH' },
        { AttributeName: 'listKey', KeyType: 'RANGE' },
      ],
      Projection: { NonKeyAttributes: listedAttributes, ProjectionType: 'INCLUDE' },
    });
    const table = resources('AWS::DynamoDB::GlobalTable').StorageTableB43FDCE7;
    expect(table?.DeletionPolicy).toBe('Retain');
    expect(table?.Properties).toEqual({
      AttributeDefinitions: ['pk', 'sk', 'ownerKey', 'listKey', 'tenantKey', 'runningKey'].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
      BillingMode: 'PAY_PER_REQUEST',
      GlobalSecondaryIndexes: [index('runs-by-owner', 'ownerKey'), index('runs-by-tenant', 'tenantKey'), index('running-by-owner', 'runningKey')],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      Replicas: [
        {
          GlobalSecondaryIndexes: [{ IndexName: 'runs-by-owner' }, { IndexName: 'runs-by-tenant' }, { IndexName: 'running-by-owner' }],
          PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          Region: { Ref: 'AWS::Region' },
        },
      ],
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
    });
    const bucket = resources('AWS::S3::Bucket').StorageWorkspacesEA25CA2E;
    expect(bucket?.DeletionPolicy).toBe('Retain');
    expect(bucket?.Properties).toEqual({
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      LifecycleConfiguration: { Rules: [{ NoncurrentVersionExpiration: { NoncurrentDays: 30 }, Status: 'Enabled' }] },
      LoggingConfiguration: { DestinationBucketName: { Ref: 'StorageAccessLogs96FB524C' }, LogFilePrefix: 'workspaces/' },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      VersioningConfiguration: { Status: 'Enabled' },
    });
    expect(resources('AWS::Events::EventBus').BusEA82B648?.Properties).toEqual({ Name: 'Stepwise-events' });
  });

  it('keeps agent definitions (agent#) to the functions that start runs, which store them, and the steps, which read the version a run recorded', () => {
    const table = { 'Fn::GetAtt': [Object.keys(template.findResources('AWS::DynamoDB::GlobalTable'))[0], 'Arn'] };
    const touching: Record<string, Statement[]> = {};
    for (const [id, policy] of Object.entries(template.findResources('AWS::IAM::Policy'))) {
      const statements = (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement;
      const found = statements.filter((st) => JSON.stringify(st).includes('agent#'));
      if (found.length) touching[withoutHash(id)] = found;
    }
    const statement = (actions: string | string[]) => [
      { Action: actions, Effect: 'Allow', Resource: table, Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['agent#*'] } } },
    ];
    // A conditional put stores each version once; nothing updates or deletes one, nothing queries them.
    const write = statement(['dynamodb:GetItem', 'dynamodb:PutItem']);
    expect(touching).toEqual({
      FrontDoorApiRoleDefaultPolicy: write,
      FrontDoorIntakeRoleDefaultPolicy: write,
      // The eval steps start a deployed eval's case runs as the intake does.
      EvalsStepRoleDefaultPolicy: write,
      LiveStreamRoleDefaultPolicy: write,
      InferenceRoleDefaultPolicy: statement('dynamodb:GetItem'),
      ToolRoleDefaultPolicy: statement('dynamodb:GetItem'),
    });
  });
});
