import { Stack } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { describe, expect, it } from 'vitest';
import { synthesize } from '../support/synth.js';
import { stepwiseStack } from '../support/template.js';

const { template, violations } = stepwiseStack();

describe('StepwiseStack', () => {
  it('passes cdk-nag AwsSolutionsChecks, every exception acknowledged with a reason', () => {
    expect(violations).toEqual([]);
  });

  it('runs cdk-nag for real: a bare bucket is reported', () => {
    const bare = synthesize(
      (app) => {
        const stack = new Stack(app, 'Bare');
        new s3.Bucket(stack, 'Bucket');
        return stack;
      },
      { nag: true },
    );
    expect(bare.violations).toEqual(expect.arrayContaining(['AwsSolutions-S10 Bare/Bucket/Resource']));
  });

  it('logs every state machine transition without payloads', () => {
    for (const sm of Object.values(template.findResources('AWS::StepFunctions::StateMachine')) as { Properties: Record<string, unknown> }[]) {
      expect(sm.Properties).toMatchObject({
        StateMachineType: 'STANDARD',
        LoggingConfiguration: { Level: 'ALL', IncludeExecutionData: false },
        TracingConfiguration: { Enabled: true },
      });
    }
  });
});
