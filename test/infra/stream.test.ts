/**
 * The live stream, deployed (lib/stream.ts): a function URL in RESPONSE_STREAM mode, authenticated
 * as the HTTP API is, a timeout above the longest stream, and grants that read what a stream reads.
 */
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ApiAuth } from '../../lib/front-door.js';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';
import { type Statement, functionOf, logicalIdOf, stepwiseStack, statementsOf } from '../support/template.js';

const { template, violations } = stepwiseStack();
const jwtAuth: ApiAuth & { type: 'jwt' } = { type: 'jwt', issuer: 'https://idp.example.com/pool', audience: ['stepwise', 'console'], tenantClaim: 'custom:tenant' };

/** The one function URL of a template. */
function urlOf(t: Template): Record<string, unknown> {
  const urls = Object.values(t.findResources('AWS::Lambda::Url')) as { Properties: Record<string, unknown> }[];
  expect(urls).toHaveLength(1);
  return urls[0]?.Properties ?? {};
}

/** The resource-based permissions on the stream function. */
function permissionsOf(t: Template): Record<string, unknown>[] {
  const fn = logicalIdOf(t, 'LiveStreamFunction', 'AWS::Lambda::Function');
  return (Object.values(t.findResources('AWS::Lambda::Permission')) as { Properties: Record<string, unknown> }[])
    .map((p) => p.Properties)
    .filter((p) => JSON.stringify(p.FunctionName).includes(fn));
}

describe('the live stream with IAM auth (the default)', () => {
  it('is a function URL in RESPONSE_STREAM mode that takes SigV4-signed requests only, output as StreamUrl', () => {
    const fn = logicalIdOf(template, 'LiveStreamFunction', 'AWS::Lambda::Function');
    expect(urlOf(template)).toEqual({ AuthType: 'AWS_IAM', InvokeMode: 'RESPONSE_STREAM', TargetFunctionArn: { 'Fn::GetAtt': [fn, 'Arn'] } });
    // No resource policy opens it: a caller needs the grant in its own policy.
    expect(permissionsOf(template)).toEqual([]);
    template.hasOutput('StreamUrl', { Value: { 'Fn::GetAtt': [logicalIdOf(template, 'LiveStreamFunctionFunctionUrl', 'AWS::Lambda::Url'), 'FunctionUrl'] } });
  });

  it('gives callers the right to open the URL, and only through the URL, in the callers\' policy', () => {
    const fn = { 'Fn::GetAtt': [logicalIdOf(template, 'LiveStreamFunction', 'AWS::Lambda::Function'), 'Arn'] };
    const policy = Object.values(template.findResources('AWS::IAM::ManagedPolicy')).find((p) =>
      JSON.stringify(p).includes('start, list, read, watch and cancel'),
    ) as { Properties: { PolicyDocument: { Statement: Statement[] } } };
    const lambdaGrants = policy.Properties.PolicyDocument.Statement.filter((s) => [s.Action].flat().some((a) => a.startsWith('lambda:')));
    expect(lambdaGrants).toEqual([
      { Action: 'lambda:InvokeFunctionUrl', Effect: 'Allow', Resource: fn, Condition: { StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } } },
      { Action: 'lambda:InvokeFunction', Effect: 'Allow', Resource: fn, Condition: { Bool: { 'lambda:InvokedViaFunctionUrl': 'true' } } },
    ]);
    const reviewers = Object.values(template.findResources('AWS::IAM::ManagedPolicy')).find((p) => JSON.stringify(p).includes('decide approvals'));
    expect(JSON.stringify(reviewers)).not.toContain('lambda:');
  });

  it('runs 15 minutes, ending each stream a minute earlier, with the API\'s callers and intake settings', () => {
    const stream = functionOf(template, 'stream');
    const api = functionOf(template, 'api');
    expect(stream.Properties.Timeout).toBe(900);
    const maxSeconds = Number(stream.Properties.Environment.Variables.STEPWISE_STREAM_MAX_SECONDS);
    expect(maxSeconds).toBe(840);
    expect(maxSeconds).toBeLessThan(stream.Properties.Timeout);
    // The API's card names this URL's /a2a as the A2A interface (the stream function knows its own URL from requests).
    // The schedules' and evals' settings are the API's alone: the stream starts runs, not schedules or evals.
    const {
      STEPWISE_A2A_URL: a2aUrl,
      STEPWISE_SCHEDULE_GROUP: _group,
      STEPWISE_SCHEDULER_ROLE_ARN: _role,
      STEPWISE_EVENT_BUS_ARN: _bus,
      STEPWISE_EVALS_ARN: _evals,
      ...apiVariables
    } = api.Properties.Environment.Variables;
    expect(a2aUrl).toEqual({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalIdOf(template, 'LiveStreamFunctionFunctionUrl', 'AWS::Lambda::Url'), 'FunctionUrl'] }, 'a2a']] });
    expect(stream.Properties.Environment.Variables).toEqual({
      ...apiVariables,
      STEPWISE_HANDLER: 'stream',
      STEPWISE_STREAM_MAX_SECONDS: '840',
      STEPWISE_MAX_STREAMS_PER_CALLER: '10',
    });
    expect(stream.Properties.Environment.Variables.STEPWISE_AUTH).toBe('iam');
  });

  it('reads only what a stream reads, writes only what starting a run writes, stops only orchestrator executions (A2A CancelTask): no workspace, no task token, no listing', () => {
    const statements = statementsOf(template, 'LiveStreamRole');
    const actions = [...new Set(statements.flatMap((s) => [s.Action].flat()))].sort();
    expect(actions).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      's3:GetObject',
      's3:PutObject',
      'states:StartExecution',
      'states:StopExecution',
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
    // Large bodies: read under conversations/, read and written under runs/ (a large goal); never workspaces/.
    const objects = (action: string) =>
      statements.filter((s) => [s.Action].flat().includes(action)).map((s) => JSON.stringify(s.Resource).match(/\/(\w+)\/\*/)?.[1]).sort();
    expect(objects('s3:GetObject')).toEqual(['conversations', 'runs']);
    expect(objects('s3:PutObject')).toEqual(['runs']);
    // Every table grant is limited to item families.
    for (const s of statements.filter((st) => [st.Action].flat().some((a) => a.startsWith('dynamodb:')))) {
      expect(JSON.stringify(s.Condition)).toContain('dynamodb:LeadingKeys');
    }
    const start = statements.find((s) => s.Action === 'states:StartExecution');
    expect(start?.Resource).toEqual({ Ref: logicalIdOf(template, 'OrchestratorStateMachine', 'AWS::StepFunctions::StateMachine') });
    const stop = statements.find((s) => s.Action === 'states:StopExecution');
    expect(JSON.stringify(stop?.Resource)).toMatch(/:execution:".*OrchestratorStateMachine.*Name.*:\*/);
  });

  it('stays clean under cdk-nag', () => {
    expect(violations).toEqual([]);
  });
});

describe('the live stream with JWT auth', () => {
  let jwt: Template;
  let jwtViolations: string[];
  beforeAll(() => {
    ({ template: jwt, violations: jwtViolations } = synthesize((app) => new StepwiseStack(app, 'Jwt', { auth: jwtAuth }), { nag: true }));
  }, 120_000);

  it('is an open URL (NONE) in RESPONSE_STREAM mode whose function verifies tokens against the HTTP API authorizer\'s issuer and audiences', () => {
    expect(urlOf(jwt)).toMatchObject({ AuthType: 'NONE', InvokeMode: 'RESPONSE_STREAM' });
    jwt.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', { JwtConfiguration: { Issuer: jwtAuth.issuer, Audience: jwtAuth.audience } });
    expect(functionOf(jwt, 'stream').Properties.Environment.Variables).toMatchObject({
      STEPWISE_AUTH: 'jwt',
      STEPWISE_JWT_ISSUER: jwtAuth.issuer,
      STEPWISE_JWT_AUDIENCE: 'stepwise,console',
      STEPWISE_TENANT_CLAIM: 'custom:tenant',
      STEPWISE_STREAM_MAX_SECONDS: '840',
    });
    // The key set is the issuer's own (discovered at run time) unless one is named.
    expect(Object.keys(functionOf(jwt, 'stream').Properties.Environment.Variables)).not.toContain('STEPWISE_JWKS_URL');
  });

  it('lets anyone reach the function only through its URL, which Lambda opens to the public in NONE mode', () => {
    expect(permissionsOf(jwt)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Action: 'lambda:InvokeFunctionUrl', Principal: '*', FunctionUrlAuthType: 'NONE' }),
        expect.objectContaining({ Action: 'lambda:InvokeFunction', Principal: '*', InvokedViaFunctionUrl: true }),
      ]),
    );
    expect(permissionsOf(jwt)).toHaveLength(2);
    expect(Object.keys(jwt.findResources('AWS::IAM::ManagedPolicy'))).toEqual([]);
  });

  it('reads the key set where the deployment names it', () => {
    const { template: named } = synthesize(
      (app) => new StepwiseStack(app, 'Keys', { auth: { ...jwtAuth, jwksUri: 'https://idp.example.com/pool/keys.json' } }),
    );
    expect(functionOf(named, 'stream').Properties.Environment.Variables.STEPWISE_JWKS_URL).toBe('https://idp.example.com/pool/keys.json');
  });

  it('stays clean under cdk-nag', () => {
    expect(jwtViolations).toEqual([]);
  });
});

describe('the live stream\'s concurrency', () => {
  it('is reserved to 100 by default, leaving the agent loop the rest, and 10 streams per caller; both are settings', () => {
    expect(functionOf(template, 'stream').Properties).toMatchObject({
      ReservedConcurrentExecutions: 100,
      Environment: { Variables: expect.objectContaining({ STEPWISE_MAX_STREAMS_PER_CALLER: '10' }) },
    });
    const { template: capped } = synthesize((app) => new StepwiseStack(app, 'Capped', { maxConcurrentStreams: 50, maxStreamsPerCaller: 3 }));
    expect(functionOf(capped, 'stream').Properties).toMatchObject({
      ReservedConcurrentExecutions: 50,
      Timeout: 900,
      Environment: { Variables: expect.objectContaining({ STEPWISE_MAX_STREAMS_PER_CALLER: '3' }) },
    });
    capped.hasResourceProperties('AWS::Lambda::Url', Match.objectLike({ InvokeMode: 'RESPONSE_STREAM' }));
    const { template: open } = synthesize((app) => new StepwiseStack(app, 'Unreserved', { maxConcurrentStreams: 'unreserved' }));
    expect(functionOf(open, 'stream').Properties.ReservedConcurrentExecutions).toBeUndefined();
    expect(() => synthesize((app) => new StepwiseStack(app, 'Zero', { maxStreamsPerCaller: 0 }))).toThrow('maxStreamsPerCaller must be a positive whole number, not 0.');
  });
});
