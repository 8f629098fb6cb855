import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { StepwiseStack } from '../../lib/stepwise-stack.js';

interface NagReport {
  pluginReports: { violations: { ruleName: string; violatingConstructs: { constructPath: string }[] }[] }[];
}

/** Synthesizes an app with cdk-nag's AwsSolutionsChecks and lists what it reports. */
function nagViolations(app: App): string[] {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  try {
    app.synth();
  } catch (error) {
    // Synthesis fails on unacknowledged findings; the report below lists them.
    if (!(error instanceof Error) || error.name !== 'ValidationFailed') throw error;
  }
  const report = JSON.parse(readFileSync(join(app.outdir, 'validation-report.json'), 'utf8')) as NagReport;
  return report.pluginReports.flatMap((r) =>
    r.violations.map((v) => `${v.ruleName} ${v.violatingConstructs.map((x) => x.constructPath).join(',')}`),
  );
}

let template: Template;
let violations: string[];

beforeAll(() => {
  const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'stepwise-cdk-')) });
  const stack = new StepwiseStack(app, 'Stepwise');
  template = Template.fromStack(stack);
  violations = nagViolations(app);
}, 120_000);

/** The IAM statements attached to the role of one Stepwise function. */
function statementsOf(functionId: string): { Action: string | string[]; Resource: unknown; Condition?: unknown }[] {
  const policies = template.findResources('AWS::IAM::Policy');
  return Object.entries(policies)
    .filter(([id]) => id.startsWith(`${functionId}Role`))
    .flatMap(([, p]) => (p as { Properties: { PolicyDocument: { Statement: never[] } } }).Properties.PolicyDocument.Statement);
}

describe('StepwiseStack', () => {
  it('passes cdk-nag AwsSolutionsChecks, every exception acknowledged with a reason', () => {
    expect(violations).toEqual([]);
  });

  it('runs cdk-nag for real: a bare bucket is reported', () => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'stepwise-cdk-')) });
    new s3.Bucket(new Stack(app, 'Bare'), 'Bucket');
    expect(nagViolations(app)).toEqual(expect.arrayContaining(['AwsSolutions-S10 Bare/Bucket/Resource']));
  });

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

  it('runs every function on Node.js 22, ARM64, with tracing and its own log group', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions)).toHaveLength(2);
    for (const fn of Object.values(functions) as { Properties: Record<string, unknown> }[]) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON', LogGroup: expect.anything() },
      });
    }
  });

  it('lets the tool function reach only workspaces/ and conversations/ objects', () => {
    const s3 = statementsOf('Tool').filter((s) => JSON.stringify(s.Action).includes('s3:'));
    const objectPrefixes = s3.flatMap((s) => JSON.stringify(s.Resource).match(/\/[a-z]+\/\*/g) ?? []);
    expect(new Set(objectPrefixes)).toEqual(new Set(['/workspaces/*', '/conversations/*']));
    expect(s3.flatMap((s) => [s.Action].flat()).sort()).toEqual(['s3:GetObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject', 's3:PutObject']);
    expect(s3.find((s) => s.Action === 's3:ListBucket')?.Condition).toEqual({ StringLike: { 's3:prefix': ['workspaces/*'] } });
  });

  it('gives no function a wildcard action or a managed policy', () => {
    for (const id of ['Inference', 'Tool']) {
      for (const s of statementsOf(id)) for (const action of [s.Action].flat()) expect(action).not.toMatch(/\*/);
    }
    const roles = template.findResources('AWS::IAM::Role');
    for (const role of Object.values(roles) as { Properties: Record<string, unknown> }[]) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });
});
