import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { nagViolations } from '../support/nag.js';

let template: Template;
let violations: string[];

beforeAll(() => {
  const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'stepwise-cdk-')) });
  const stack = new StepwiseStack(app, 'Stepwise');
  // cdk-nag first: a template read before would leave a synthesized app that nag never checks.
  violations = nagViolations(app);
  template = Template.fromJSON(app.synth().getStackArtifact(stack.artifactId).template);
}, 120_000);

/** The logical id of the one resource of `type` whose id starts with `prefix`. */
function logicalIdOf(prefix: string, type: string): string {
  const ids = Object.keys(template.findResources(type)).filter((id) => id.startsWith(prefix));
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

/** A state machine's ASL, with the template's tokens left as they are. */
function definitionOf(prefix: string): Record<string, unknown> {
  const id = logicalIdOf(prefix, 'AWS::StepFunctions::StateMachine');
  const sm = template.findResources('AWS::StepFunctions::StateMachine')[id] as { Properties: { DefinitionString: unknown } };
  // Tokens sit between string fragments of an Fn::Join; a placeholder JSON string keeps the document parseable.
  const join = (sm.Properties.DefinitionString as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
  const tokens: unknown[] = [];
  const text = join.map((part) => (typeof part === 'string' ? part : `@@${tokens.push(part) - 1}@@`)).join('');
  const restore = (value: unknown): unknown => {
    if (typeof value === 'string') {
      const parts = value.split(/@@(\d+)@@/);
      if (parts.length === 1) return value;
      const pieces = parts.map((p, i) => (i % 2 ? tokens[Number(p)] : p)).filter((p) => p !== '');
      return pieces.length === 1 ? pieces[0] : { 'Fn::Join': ['', pieces] };
    }
    if (Array.isArray(value)) return value.map(restore);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, restore(v)]));
    return value;
  };
  return restore(JSON.parse(text)) as Record<string, unknown>;
}

/** The IAM statements of the policies whose logical ids start with `rolePrefix`. */
function statementsOf(rolePrefix: string): { Action: string | string[]; Resource: unknown; Condition?: unknown }[] {
  const policies = template.findResources('AWS::IAM::Policy');
  return Object.entries(policies)
    .filter(([id]) => id.startsWith(rolePrefix))
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
    expect(Object.keys(functions).map((id) => id.replace(/[0-9A-F]{8}$/, '')).sort()).toEqual([
      'ApprovalFunction',
      'FrontDoorApiFunction',
      'FrontDoorIntakeFunction',
      'InferenceFunction',
      'ToolFunction',
    ]);
    for (const fn of Object.values(functions) as { Properties: Record<string, unknown> }[]) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON', LogGroup: expect.anything() },
      });
    }
  });

  it('lets tools reach workspaces only through the workspace role, which the tool function alone assumes', () => {
    const toolS3 = statementsOf('ToolRole').filter((st) => JSON.stringify(st.Action).includes('s3:'));
    expect(toolS3.flatMap((st) => JSON.stringify(st.Resource).match(/\/[a-z]+\/\*/g) ?? [])).toEqual(['/conversations/*']);
    const assume = statementsOf('ToolRole').find((st) => st.Action === 'sts:AssumeRole');
    const workspaceRoleId = logicalIdOf('WorkspaceRole', 'AWS::IAM::Role');
    expect(assume?.Resource).toEqual({ 'Fn::GetAtt': [workspaceRoleId, 'Arn'] });

    const ws = statementsOf('WorkspaceRoleDefaultPolicy');
    expect(ws.flatMap((st) => [st.Action].flat()).sort()).toEqual(['s3:GetObject', 's3:ListBucket', 's3:PutObject']);
    expect(ws.flatMap((st) => JSON.stringify(st.Resource).match(/\/[a-z]+\/\*/g) ?? [])).toEqual(['/workspaces/*']);
    expect(ws.find((st) => st.Action === 's3:ListBucket')?.Condition).toEqual({ StringLike: { 's3:prefix': ['workspaces/*'] } });
    const role = template.findResources('AWS::IAM::Role')[workspaceRoleId] as { Properties: { AssumeRolePolicyDocument: unknown } };
    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain(logicalIdOf('ToolRole', 'AWS::IAM::Role'));
    const assumers = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([, p]) => JSON.stringify(p).includes('sts:AssumeRole') && JSON.stringify(p).includes(workspaceRoleId))
      .map(([id]) => id.replace(/[0-9A-F]{8}$/, ''));
    expect(assumers).toEqual(['ToolRoleDefaultPolicy']);
  });

  it('loops Inference → Route → Tools → NextIteration with bounded concurrency and small payloads', () => {
    const loop = definitionOf('AgentLoop');
    const states = loop.States as Record<string, Record<string, unknown>>;
    expect(loop.StartAt).toBe('Begin');
    expect(states.Inference).toMatchObject({
      Type: 'Task',
      Next: 'Route',
      TimeoutSeconds: 360,
      ResultPath: '$.step',
      ResultSelector: { 'stopReason.$': '$.Payload.stopReason', 'toolCalls.$': '$.Payload.toolCalls', 'seq.$': '$.Payload.seq' },
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.failure', Next: 'DescribeFailure' }],
    });
    expect(states.Route?.Choices).toEqual([
      { Variable: '$.step.stopReason', StringEquals: 'tool_use', Next: 'Tools' },
      { Or: [{ Variable: '$.step.stopReason', StringEquals: 'end_turn' }, { Variable: '$.step.stopReason', StringEquals: 'stop_sequence' }], Next: 'Done' },
      { Variable: '$.step.stopReason', StringEquals: 'refusal', Next: 'Refused' },
      { Variable: '$.step.stopReason', StringEquals: 'model_context_window_exceeded', Next: 'ContextFull' },
    ]);
    expect(states.Route?.Default).toBe('NextIteration');
    expect(states.Tools).toMatchObject({ Type: 'Map', MaxConcurrency: 8, ItemsPath: '$.step.toolCalls', ResultPath: null, Next: 'NextIteration' });
    expect(states.WithinLimit).toMatchObject({
      Choices: [
        { Variable: '$.iteration', NumericGreaterThanEqualsPath: '$.maxIterations', Next: 'DescribeLimit' },
        { Variable: '$.iteration', NumericGreaterThanEqualsPath: '$.segmentEnd', Next: 'ContinueAsNew' },
      ],
      Default: 'Inference',
    });
    expect(states.ContinueAsNew).toMatchObject({
      Type: 'Task',
      Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::states:startExecution.sync:2']] },
      Parameters: { 'StateMachineArn.$': '$$.StateMachine.Id', 'Name.$': "States.Format('{}-{}-{}', $.runId, $.agent, $.iteration)" },
    });
    expect(states.MaxIterationsExceeded).toEqual({ Type: 'Fail', Error: 'MaxIterationsExceeded', CausePath: '$.limit.message' });
  });

  it('retries transient errors with backoff and full jitter, and nothing else', () => {
    const states = definitionOf('AgentLoop').States as Record<string, { Retry?: Record<string, unknown>[] }>;
    const retries = states.Inference?.Retry ?? [];
    expect(retries.map((r) => r.ErrorEquals)).toEqual([
      ['Lambda.ServiceException', 'Lambda.AWSLambdaException', 'Lambda.SdkClientException', 'Lambda.TooManyRequestsException', 'Lambda.Unknown'],
      ['ModelThrottled', 'ModelOverloaded', 'ModelUnavailable', 'ModelResponseEmpty', 'StoreUnavailable', 'WorkspaceUnavailable', 'ToolUnavailable'],
      ['States.Timeout', 'Sandbox.Timedout'],
    ]);
    for (const retry of retries) expect(retry).toMatchObject({ JitterStrategy: 'FULL', BackoffRate: 2 });
    expect(retries[1]).toMatchObject({ IntervalSeconds: 2, MaxAttempts: 6, MaxDelaySeconds: 60 });
    expect(retries.flatMap((r) => r.ErrorEquals as string[])).not.toContain('States.ALL');
    // An external tool's throttled or failing service is retried in the Map's tool step.
    const map = states.Tools as unknown as { ItemProcessor: { States: Record<string, { Retry?: { ErrorEquals: string[] }[] }> } };
    expect(map.ItemProcessor.States.Tool?.Retry?.flatMap((r) => r.ErrorEquals)).toContain('ToolUnavailable');
  });

  it('nests the agent loop with startExecution.sync:2 and may start only that state machine', () => {
    const states = definitionOf('Orchestrator').States as Record<string, { Resource?: unknown; Parameters?: Record<string, unknown> }>;
    const loopRef = { Ref: logicalIdOf('AgentLoop', 'AWS::StepFunctions::StateMachine') };
    for (const [state, agent] of [['RunSingle', 'single'], ['RunArchitect', 'architect'], ['RunCoder', 'coder']] as const) {
      expect(states[state]?.Resource).toEqual({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::states:startExecution.sync:2']] });
      expect(states[state]?.Parameters).toMatchObject({ StateMachineArn: loopRef, 'Name.$': `States.Format('{}-${agent}', $.runId)`, Input: { agent } });
    }
    const statements = statementsOf('OrchestratorStateMachineRole');
    const starts = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('states:')));
    expect(starts.find((s) => s.Action === 'states:StartExecution')?.Resource).toEqual(loopRef);
    // Describe/Stop reach only executions of the agent loop.
    for (const s of starts.filter((s) => s.Action !== 'states:StartExecution')) {
      expect(JSON.stringify(s.Resource)).toContain(`{"Ref":"${loopRef.Ref}"}`);
    }
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

  it('sends completion events to the project bus', () => {
    const states = definitionOf('Orchestrator').States as Record<string, { Parameters?: { Entries?: Record<string, unknown>[] } }>;
    const busRef = { 'Fn::GetAtt': [logicalIdOf('Bus', 'AWS::Events::EventBus'), 'Arn'] };
    for (const name of ['EmitSucceeded', 'EmitFailed', 'EmitCancelled']) {
      expect(states[name]?.Parameters?.Entries?.[0]).toMatchObject({ Source: 'stepwise', EventBusName: busRef });
    }
  });

  it('requires IAM authorization on every route of the HTTP API by default', () => {
    const routes = template.findResources('AWS::ApiGatewayV2::Route');
    expect(Object.values(routes).map((r) => (r as { Properties: { RouteKey: string } }).Properties.RouteKey).sort()).toEqual([
      'GET /openapi.json',
      'GET /runs/{runId}',
      'GET /runs/{runId}/files',
      'GET /runs/{runId}/files/{path+}',
      'GET /runs/{runId}/messages',
      'POST /runs',
      'POST /runs/{runId}/approvals/{toolUseId}',
      'POST /runs/{runId}/cancel',
    ]);
    for (const route of Object.values(routes) as { Properties: Record<string, unknown> }[]) {
      expect(route.Properties.AuthorizationType).toBe('AWS_IAM');
    }
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { StageName: '$default', AccessLogSettings: Match.objectLike({}) });
  });

  it('can use a JWT authorizer instead, chosen in the props', () => {
    const jwtStack = new StepwiseStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Jwt', {
      auth: { type: 'jwt', issuer: 'https://issuer.example.com', audience: ['stepwise'] },
    });
    const jwt = Template.fromStack(jwtStack);
    jwt.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      JwtConfiguration: { Issuer: 'https://issuer.example.com', Audience: ['stepwise'] },
    });
    for (const route of Object.values(jwt.findResources('AWS::ApiGatewayV2::Route')) as { Properties: Record<string, unknown> }[]) {
      expect(route.Properties.AuthorizationType).toBe('JWT');
    }
  });

  it('sends Stepwise Run Requested events from the bus to the intake, with a dead-letter queue', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: { Ref: logicalIdOf('Bus', 'AWS::Events::EventBus') },
      EventPattern: { 'detail-type': ['Stepwise Run Requested'] },
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalIdOf('FrontDoorIntakeFunction', 'AWS::Lambda::Function'), 'Arn'] },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalIdOf('FrontDoorDeadLetters', 'AWS::SQS::Queue'), 'Arn'] } },
          RetryPolicy: { MaximumRetryAttempts: 4, MaximumEventAgeInSeconds: 7200 },
        }),
      ],
    });
  });

  it('lets the API start and stop only orchestrator executions', () => {
    const orchestratorRef = { Ref: logicalIdOf('OrchestratorStateMachine', 'AWS::StepFunctions::StateMachine') };
    const states = statementsOf('FrontDoorApiRole').filter((s) => [s.Action].flat().some((a) => /^states:(Start|Stop)/.test(a)));
    expect(states.map((s) => s.Action).sort()).toEqual(['states:StartExecution', 'states:StopExecution']);
    expect(states.find((s) => s.Action === 'states:StartExecution')?.Resource).toEqual(orchestratorRef);
    expect(JSON.stringify(states.find((s) => s.Action === 'states:StopExecution')?.Resource)).toContain(':execution:');
  });

  it('gates a tool call on a reviewer: .waitForTaskToken bounded by the approval timeout, never retried on timeout', () => {
    const loop = definitionOf('AgentLoop');
    const processor = (loop.States as Record<string, { ItemProcessor: { StartAt: string; States: Record<string, Record<string, unknown>> } }>).Tools
      ?.ItemProcessor;
    const states = processor?.States ?? {};
    expect(processor?.StartAt).toBe('NeedsApproval');
    expect(states.NeedsApproval).toEqual({
      Type: 'Choice',
      Choices: [{ Variable: '$.needsApproval', BooleanEquals: true, Next: 'RequestApproval' }],
      Default: 'Tool',
    });
    expect(states.RequestApproval).toMatchObject({ Type: 'Task', ResultPath: '$.approval', Next: 'AlreadyDecided' });
    expect(states.AlreadyDecided).toMatchObject({ Choices: [{ Variable: '$.approval.decided', BooleanEquals: true, Next: 'Tool' }], Default: 'AnnounceApproval' });
    const approvalFn = { 'Fn::GetAtt': [logicalIdOf('ApprovalFunction', 'AWS::Lambda::Function'), 'Arn'] };
    const wait = states.AwaitDecision as { Retry: { ErrorEquals: string[] }[]; Catch: unknown[] } & Record<string, unknown>;
    expect(wait).toMatchObject({
      Type: 'Task',
      Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::lambda:invoke.waitForTaskToken']] },
      Parameters: { FunctionName: approvalFn, Payload: { step: 'await', 'toolUseId.$': '$.toolUseId', 'token.$': '$$.Task.Token' } },
      TimeoutSeconds: 86_400,
      Next: 'Tool',
    });
    expect(wait.HeartbeatSeconds).toBeUndefined();
    // A reviewer's silence is not a fault to retry: it ends in the tool step, denied with reason timeout.
    expect(wait.Retry.flatMap((r) => r.ErrorEquals)).not.toContain('States.Timeout');
    expect(wait.Catch).toEqual([{ ErrorEquals: ['States.Timeout', 'ApprovalDecided'], ResultPath: null, Next: 'Tool' }]);
    expect(states.AnnounceApproval).toMatchObject({
      Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::events:putEvents']] },
      Parameters: {
        Entries: [
          {
            Source: 'stepwise',
            DetailType: 'Stepwise Approval Requested',
            'Detail.$': '$.approval.detail',
            EventBusName: { 'Fn::GetAtt': [logicalIdOf('Bus', 'AWS::Events::EventBus'), 'Arn'] },
          },
        ],
      },
      Next: 'AwaitDecision',
    });
    expect(states.Tool).toMatchObject({ Parameters: { 'needsApproval.$': '$.needsApproval' }, End: true });

    const shorter = new StepwiseStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Short', { approvalTimeout: Duration.minutes(10) });
    const defs = Template.fromStack(shorter).findResources('AWS::StepFunctions::StateMachine');
    expect(JSON.stringify(Object.values(defs))).toContain('\\"TimeoutSeconds\\":600');
  });

  it('lets only the API function answer the agent loop\'s task tokens', () => {
    const loopRef = { Ref: logicalIdOf('AgentLoop', 'AWS::StepFunctions::StateMachine') };
    const answering = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([, p]) => /states:SendTask(Success|Failure)/.test(JSON.stringify(p)))
      .map(([id]) => id.replace(/[0-9A-F]{8}$/, ''));
    expect(answering).toEqual(['FrontDoorApiRoleDefaultPolicy']);
    const grant = statementsOf('FrontDoorApiRole').find((st) => [st.Action].flat().includes('states:SendTaskSuccess'));
    expect([grant?.Action].flat()).toEqual(expect.arrayContaining(['states:SendTaskSuccess', 'states:SendTaskFailure']));
    expect(grant?.Resource).toEqual(loopRef);
  });

  it('nests timeouts: one model call < the inference Lambda < its state, with no SDK retry deployed', () => {
    const inference = Object.values(template.findResources('AWS::Lambda::Function')).find((f) =>
      JSON.stringify(f).includes('"STEPWISE_HANDLER":"inference"'),
    ) as { Properties: { Timeout: number; Environment: { Variables: Record<string, string> } } };
    const modelMs = Number(inference.Properties.Environment.Variables.STEPWISE_MODEL_TIMEOUT_MS);
    expect(inference.Properties.Environment.Variables.STEPWISE_MODEL_MAX_RETRIES).toBe('0');
    const stateTimeout = (definitionOf('AgentLoop').States as Record<string, { TimeoutSeconds?: number }>).Inference?.TimeoutSeconds ?? 0;
    expect(modelMs / 1000).toBeLessThan(inference.Properties.Timeout);
    expect(inference.Properties.Timeout).toBeLessThan(stateTimeout);
  });

  it('keeps the Anthropic key in Secrets Manager, readable by the inference function only', () => {
    const secretId = logicalIdOf('AnthropicApiKey', 'AWS::SecretsManager::Secret');
    for (const fn of Object.values(template.findResources('AWS::Lambda::Function')) as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }[]) {
      expect(Object.keys(fn.Properties.Environment?.Variables ?? {})).not.toContain('ANTHROPIC_API_KEY');
    }
    const inference = Object.values(template.findResources('AWS::Lambda::Function')).find((f) =>
      JSON.stringify(f).includes('"STEPWISE_HANDLER":"inference"'),
    ) as { Properties: { Environment: { Variables: Record<string, unknown> } } };
    expect(inference.Properties.Environment.Variables.ANTHROPIC_API_KEY_SECRET_ARN).toEqual({ Ref: secretId });
    const readers = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([, p]) => JSON.stringify(p).includes('secretsmanager:GetSecretValue'))
      .map(([id]) => id.replace(/[0-9A-F]{8}$/, ''));
    expect(readers).toEqual(['InferenceRoleDefaultPolicy']);
    const read = statementsOf('InferenceRole').find((st) => [st.Action].flat().includes('secretsmanager:GetSecretValue'));
    expect(read?.Resource).toEqual({ Ref: secretId });
  });

  it('gives no function a wildcard action or a managed policy', () => {
    for (const id of ['InferenceRole', 'ToolRole', 'ApprovalRole', 'WorkspaceRole', 'FrontDoorApiRole', 'FrontDoorIntakeRole']) {
      for (const s of statementsOf(id)) for (const action of [s.Action].flat()) expect(action).not.toMatch(/\*/);
    }
    const roles = template.findResources('AWS::IAM::Role');
    for (const role of Object.values(roles) as { Properties: Record<string, unknown> }[]) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });
});

describe('StepwiseStack on Bedrock', () => {
  const model = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
  const haiku = 'anthropic.claude-haiku-4-5-20251001-v1:0';
  let bedrock: Template;
  let bedrockViolations: string[];

  beforeAll(() => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'stepwise-cdk-')), context: { 'aws:cdk:bundling-stacks': [] } });
    bedrock = Template.fromStack(new StepwiseStack(app, 'Bedrock', { provider: 'bedrock', model, allowedModels: [haiku, model] }));
    bedrockViolations = nagViolations(app);
  }, 120_000);

  /** The statements of the policies whose logical ids start with `prefix`, in this template. */
  const statements = (prefix: string) =>
    Object.entries(bedrock.findResources('AWS::IAM::Policy'))
      .filter(([id]) => id.startsWith(prefix))
      .flatMap(([, p]) => (p as { Properties: { PolicyDocument: { Statement: Record<string, unknown>[] } } }).Properties.PolicyDocument.Statement);
  const functionEnv = (handler: string) =>
    (
      Object.values(bedrock.findResources('AWS::Lambda::Function')).find((f) => JSON.stringify(f).includes(`"STEPWISE_HANDLER":"${handler}"`)) as {
        Properties: { Environment: { Variables: Record<string, unknown> } };
      }
    ).Properties.Environment.Variables;

  it('passes cdk-nag AwsSolutionsChecks, every exception acknowledged with a reason', () => {
    expect(bedrockViolations).toEqual([]);
  });

  it('lets the inference function InvokeModel on the allowed models only: a foundation model here, a profile and its model through it', () => {
    const partition = { Ref: 'AWS::Partition' };
    const profileArn = { 'Fn::Join': ['', ['arn:', partition, ':bedrock:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:inference-profile/${model}`]] };
    expect(statements('InferenceRole').filter((s) => JSON.stringify(s.Action).includes('bedrock:'))).toEqual([
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
    const invokers = Object.entries(bedrock.findResources('AWS::IAM::Policy'))
      .filter(([, p]) => JSON.stringify(p).includes('bedrock:'))
      .map(([id]) => id.replace(/[0-9A-F]{8}$/, ''));
    expect(invokers).toEqual(['InferenceRoleDefaultPolicy']);
  });

  it('creates no Anthropic secret and grants no secret access; the inference function calls Bedrock with the deployment model', () => {
    expect(bedrock.findResources('AWS::SecretsManager::Secret')).toEqual({});
    expect(JSON.stringify(bedrock.findResources('AWS::IAM::Policy'))).not.toContain('secretsmanager:');
    expect(functionEnv('inference-bedrock')).toMatchObject({ STEPWISE_PROVIDER: 'bedrock', STEPWISE_MODEL: model, STEPWISE_MODEL_MAX_RETRIES: '0' });
    expect(Object.keys(functionEnv('inference-bedrock'))).not.toContain('ANTHROPIC_API_KEY_SECRET_ARN');
  });

  it('builds the inference function from the Bedrock entry, so its bundle carries no Anthropic key path', () => {
    const handlers = Object.values(bedrock.findResources('AWS::Lambda::Function')).map(
      (f) => (f as { Properties: { Environment: { Variables: Record<string, unknown> } } }).Properties.Environment.Variables.STEPWISE_HANDLER,
    );
    expect(handlers.filter(Boolean).sort()).toEqual(['api', 'approval', 'inference-bedrock', 'run-requested', 'tool']);
  });

  it('tells the API and the intake which models a run may ask for, the deployment model first', () => {
    expect([functionEnv('api').STEPWISE_ALLOWED_MODELS, functionEnv('run-requested').STEPWISE_ALLOWED_MODELS]).toEqual([`${model},${haiku}`, `${model},${haiku}`]);
    const defaults = Template.fromStack(new StepwiseStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Defaults'));
    const allowed = Object.values(defaults.findResources('AWS::Lambda::Function')).map(
      (f) => (f as { Properties: { Environment: { Variables: Record<string, unknown> } } }).Properties.Environment.Variables.STEPWISE_ALLOWED_MODELS,
    );
    expect(allowed.filter(Boolean)).toEqual(['claude-sonnet-4-5', 'claude-sonnet-4-5']);
  });

  it.each(['claude-sonnet-4-5', 'mars.anthropic.claude-sonnet-4-5-20250929-v1:0', 'amazon.nova-pro-v1:0'])('refuses at synth the model id "%s", naming it', (id) => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    expect(() => new StepwiseStack(app, 'Wrong', { provider: 'bedrock', model: 'anthropic.claude-haiku-4-5-20251001-v1:0', allowedModels: [id] })).toThrow(
      `"${id}" is not a Claude model id on Amazon Bedrock.`,
    );
  });
});

describe('StepwiseStack with external tools', () => {
  const wordCountArn = 'arn:aws:lambda:us-east-1:123456789012:function:word-count';
  const shoutArn = 'arn:aws:lambda:us-east-1:123456789012:function:shout';
  let tools: Template;
  let toolViolations: string[];

  beforeAll(() => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'stepwise-cdk-')) });
    const elsewhere = new Stack(app, 'Elsewhere');
    const stack = new StepwiseStack(app, 'Stepwise', {
      mcpServers: [{ name: 'docs', url: 'https://mcp.example.com/mcp' }],
      tools: [
        {
          name: 'word_count',
          description: 'Counts words.',
          inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
          function: lambda.Function.fromFunctionArn(elsewhere, 'WordCount', wordCountArn),
        },
        {
          name: 'shout',
          description: 'Upper-cases.',
          inputSchema: { type: 'object' },
          function: lambda.Function.fromFunctionArn(elsewhere, 'Shout', shoutArn),
          agents: ['coder'],
        },
      ],
    });
    tools = Template.fromStack(stack);
    toolViolations = nagViolations(app);
  }, 120_000);

  const roleStatements = (prefix: string) =>
    Object.entries(tools.findResources('AWS::IAM::Policy'))
      .filter(([id]) => id.startsWith(prefix))
      .flatMap(([, p]) => (p as { Properties: { PolicyDocument: { Statement: { Action: string | string[]; Resource: unknown }[] } } }).Properties.PolicyDocument.Statement);

  it('lets the tool function invoke exactly the configured functions, and no other function invoke them', () => {
    const invokes = roleStatements('ToolRole').filter((st) => [st.Action].flat().includes('lambda:InvokeFunction'));
    expect(invokes).toEqual([expect.objectContaining({ Action: 'lambda:InvokeFunction', Resource: [wordCountArn, shoutArn] })]);
    for (const prefix of ['InferenceRole', 'ApprovalRole', 'FrontDoor']) {
      expect(JSON.stringify(roleStatements(prefix))).not.toContain('function:word-count');
    }
  });

  it('hands the configuration to the inference and tool functions, with the functions\' ARNs', () => {
    const functions = Object.values(tools.findResources('AWS::Lambda::Function')) as { Properties: { Environment: { Variables: Record<string, unknown> } } }[];
    const withTools = functions.map((f) => f.Properties.Environment.Variables).filter((v) => v.STEPWISE_LAMBDA_TOOLS !== undefined);
    expect(withTools.map((v) => v.STEPWISE_HANDLER).sort()).toEqual(['inference', 'tool']);
    for (const variables of withTools) {
      expect(JSON.parse(String(variables.STEPWISE_MCP_SERVERS))).toEqual([{ name: 'docs', url: 'https://mcp.example.com/mcp' }]);
      expect(JSON.parse(String(variables.STEPWISE_LAMBDA_TOOLS))).toEqual([
        { name: 'word_count', description: 'Counts words.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, functionName: wordCountArn },
        { name: 'shout', description: 'Upper-cases.', inputSchema: { type: 'object' }, functionName: shoutArn, agents: ['coder'] },
      ]);
    }
  });

  it('still passes cdk-nag AwsSolutionsChecks', () => {
    // "Elsewhere" only holds the imported functions (an empty template, which CloudFormation's own check notes).
    expect(toolViolations.filter((v) => !v.endsWith(' Elsewhere'))).toEqual([]);
  });

  it('refuses at synth a schema Ajv cannot compile, and takes a draft-07 one and a server URL from elsewhere in the app', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const fns = new Stack(app, 'Fns');
    const fn = lambda.Function.fromFunctionArn(fns, 'Fn', wordCountArn);
    const badSchema = { type: 'object' as const, properties: { text: { type: 'nope' } } };
    expect(() => new StepwiseStack(app, 'Bad', { tools: [{ name: 'count', description: 'x', inputSchema: badSchema, function: fn }] })).toThrow(
      /inputSchema of tool "count" is not a valid JSON Schema/,
    );
    const draft7 = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' as const, properties: { text: { type: 'string' } } };
    const url = new CfnOutput(fns, 'McpUrl', { value: 'https://mcp.example.com/mcp' }).importValue;
    expect(
      () => new StepwiseStack(app, 'Good', { tools: [{ name: 'count', description: 'x', inputSchema: draft7, function: fn }], mcpServers: [{ name: 'docs', url }] }),
    ).not.toThrow();
  });

  it('refuses at synth a tool named like a built-in, and a server name with the separator', () => {
    const fn = (app: App) => lambda.Function.fromFunctionArn(new Stack(app, 'Fns'), 'Fn', wordCountArn);
    const app = new App();
    expect(
      () => new StepwiseStack(app, 'A', { tools: [{ name: 'read_file', description: 'x', inputSchema: { type: 'object' }, function: fn(app) }] }),
    ).toThrow(/tools\.0\.name: "read_file" is a built-in tool's name|lambdaTools\.0\.name: "read_file" is a built-in tool's name/);
    expect(() => new StepwiseStack(new App(), 'B', { mcpServers: [{ name: 'my__docs', url: 'https://x/mcp' }] })).toThrow(/mcpServers\.0\.name/);
  });
});
