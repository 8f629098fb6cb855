import { App } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';
import { functionOf, functionsOf, policiesWhere, stepwiseStack, statementsOf } from '../support/template.js';

const model = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const haiku = 'anthropic.claude-haiku-4-5-20251001-v1:0';
let bedrock: Template;
let violations: string[];

beforeAll(() => {
  ({ template: bedrock, violations } = synthesize((app) => new StepwiseStack(app, 'Bedrock', { provider: 'bedrock', model, allowedModels: [haiku, model] }), { nag: true }));
}, 120_000);

/** The environment of the function built from `functions/handlers/<handler>.ts`. */
const functionEnv = (handler: string) => functionOf(bedrock, handler).Properties.Environment.Variables;

describe('StepwiseStack on Bedrock', () => {
  it('passes cdk-nag AwsSolutionsChecks, every exception acknowledged with a reason', () => {
    expect(violations).toEqual([]);
  });

  it('lets the inference function InvokeModel on the allowed models only: a foundation model here, a profile and its model through it', () => {
    const partition = { Ref: 'AWS::Partition' };
    const profileArn = { 'Fn::Join': ['', ['arn:', partition, ':bedrock:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:inference-profile/${model}`]] };
    expect(statementsOf(bedrock, 'InferenceRole').filter((s) => JSON.stringify(s.Action).includes('bedrock:'))).toEqual([
      {
        Action: 'bedrock:InvokeModel',
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', ['arn:', partition, ':bedrock:', { Ref: 'AWS::Region' }, `::foundation-model/${haiku}`]] },
      },
      { Action: 'bedrock:InvokeModel', Effect: 'Allow', Resource: profileArn },
      {
        Action: 'bedrock:InvokeModel',
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', ['arn:', partition, ':bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0']] },
        Condition: { StringEquals: { 'bedrock:InferenceProfileArn': profileArn } },
      },
    ]);
    expect(policiesWhere(bedrock, (json) => json.includes('bedrock:'))).toEqual(['InferenceRoleDefaultPolicy']);
  });

  it('creates no Anthropic secret and grants no secret access; the inference function calls Bedrock with the deployment model', () => {
    expect(bedrock.findResources('AWS::SecretsManager::Secret')).toEqual({});
    expect(JSON.stringify(bedrock.findResources('AWS::IAM::Policy'))).not.toContain('secretsmanager:');
    expect(functionEnv('inference-bedrock')).toMatchObject({ STEPWISE_PROVIDER: 'bedrock', STEPWISE_MODEL: model, STEPWISE_MODEL_MAX_RETRIES: '0' });
    expect(Object.keys(functionEnv('inference-bedrock'))).not.toContain('ANTHROPIC_API_KEY_SECRET_ARN');
  });

  it('builds the inference function from the Bedrock entry, so its bundle carries no Anthropic key path', () => {
    const handlers = functionsOf(bedrock).map((f) => f.Properties.Environment.Variables.STEPWISE_HANDLER);
    expect(handlers.filter(Boolean).sort()).toEqual(['api', 'approval', 'eval-step', 'execution-ended', 'inference-bedrock', 'run-requested', 'stream', 'tool']);
  });

  it('tells the API, the intake, the stream (POST /agui) and the eval steps which models a run may ask for, the deployment model first', () => {
    const starters = ['api', 'eval-step', 'run-requested', 'stream'];
    expect(starters.map((handler) => functionEnv(handler).STEPWISE_ALLOWED_MODELS)).toEqual(starters.map(() => `${model},${haiku}`));
    const allowed = functionsOf(stepwiseStack().template).map((f) => f.Properties.Environment.Variables.STEPWISE_ALLOWED_MODELS);
    expect(allowed.filter(Boolean)).toEqual(starters.map(() => 'claude-sonnet-4-5'));
  });

  it.each(['claude-sonnet-4-5', 'mars.anthropic.claude-sonnet-4-5-20250929-v1:0', 'amazon.nova-pro-v1:0'])('refuses at synth the model id "%s", naming it', (id) => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    expect(() => new StepwiseStack(app, 'Wrong', { provider: 'bedrock', model: 'anthropic.claude-haiku-4-5-20251001-v1:0', allowedModels: [id] })).toThrow(
      `"${id}" is not a Claude model id on Amazon Bedrock.`,
    );
  });
});
