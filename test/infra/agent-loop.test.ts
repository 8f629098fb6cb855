import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { transientErrorNames } from '../../functions/core/errors.js';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';
import { definitionOf, logicalIdOf, stepwiseStack } from '../support/template.js';

const { template } = stepwiseStack();

interface State {
  Type: string;
  Retry?: { ErrorEquals: string[] }[];
  ItemProcessor?: { States: Record<string, State> };
}

/** The states of a definition, those of its Map's item processors included. */
function allStates(states: Record<string, State>): [string, State][] {
  return Object.entries(states).flatMap(([name, state]) => [[name, state] as [string, State], ...allStates(state.ItemProcessor?.States ?? {})]);
}

/** The modules of `functions/core` and `functions/adapters`, where the error families live. */
async function functionModules(): Promise<object[]> {
  const root = fileURLToPath(new URL('../../functions/', import.meta.url));
  const files = ['core', 'adapters'].flatMap((dir) =>
    (readdirSync(`${root}${dir}`, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => `${root}${dir}/${f}`),
  );
  return Promise.all(files.map((file) => import(file) as Promise<object>));
}

/** Transient errors no agent-loop step throws: Step Functions refused the API or the intake, whose callers repeat the request. */
const outsideTheLoop = ['OrchestratorUnavailable'];

describe('AgentLoop', () => {
  it('loops Inference → Route → Tools → NextIteration with bounded concurrency and small payloads', () => {
    const loop = definitionOf(template, 'AgentLoop');
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
    const states = definitionOf(template, 'AgentLoop').States as Record<string, { Retry?: Record<string, unknown>[] }>;
    const retries = states.Inference?.Retry ?? [];
    expect(retries.map((r) => r.ErrorEquals)).toEqual([
      ['Lambda.ServiceException', 'Lambda.AWSLambdaException', 'Lambda.SdkClientException', 'Lambda.TooManyRequestsException', 'Lambda.Unknown'],
      ['ModelOverloaded', 'ModelResponseEmpty', 'ModelThrottled', 'ModelUnavailable', 'StoreUnavailable', 'ToolUnavailable', 'WorkspaceUnavailable'],
      ['States.Timeout', 'Sandbox.Timedout'],
    ]);
    for (const retry of retries) expect(retry).toMatchObject({ JitterStrategy: 'FULL', BackoffRate: 2 });
    expect(retries[1]).toMatchObject({ IntervalSeconds: 2, MaxAttempts: 6, MaxDelaySeconds: 60 });
    expect(retries.flatMap((r) => r.ErrorEquals as string[])).not.toContain('States.ALL');
    // An external tool's throttled or failing service is retried in the Map's tool step.
    const map = states.Tools as unknown as { ItemProcessor: { States: Record<string, { Retry?: { ErrorEquals: string[] }[] }> } };
    expect(map.ItemProcessor.States.Tool?.Retry?.flatMap((r) => r.ErrorEquals)).toContain('ToolUnavailable');
  });

  it('retries, in every Lambda step, each error class the functions mark transient', async () => {
    const transient = transientErrorNames(...(await functionModules()));
    expect(transient).toEqual(expect.arrayContaining(outsideTheLoop));
    const retryable = transient.filter((name) => !outsideTheLoop.includes(name));
    // A step invokes its function through lambda:invoke or by the function's ARN; either way it names the function.
    const functionIds = Object.keys(template.findResources('AWS::Lambda::Function'));
    const steps = allStates(definitionOf(template, 'AgentLoop').States as Record<string, State>).filter(
      ([, s]) => s.Type === 'Task' && functionIds.some((id) => JSON.stringify(s).includes(`"${id}"`)),
    );
    const missing = Object.fromEntries(
      steps.map(([name, step]) => [name, retryable.filter((error) => !step.Retry?.some((r) => r.ErrorEquals.includes(error)))]),
    );
    expect(missing).toEqual({ Inference: [], RequestApproval: [], AwaitDecision: [], Tool: [] });
  });

  it('gates a tool call on a reviewer: .waitForTaskToken bounded by the approval timeout, never retried on timeout', () => {
    const loop = definitionOf(template, 'AgentLoop');
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
    const approvalFn = { 'Fn::GetAtt': [logicalIdOf(template, 'ApprovalFunction', 'AWS::Lambda::Function'), 'Arn'] };
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
            EventBusName: { 'Fn::GetAtt': [logicalIdOf(template, 'Bus', 'AWS::Events::EventBus'), 'Arn'] },
          },
        ],
      },
      Next: 'AwaitDecision',
    });
    expect(states.Tool).toMatchObject({ Parameters: { 'needsApproval.$': '$.needsApproval' }, End: true });

    const shorter = synthesize((app) => new StepwiseStack(app, 'Short', { approvalTimeout: Duration.minutes(10) }));
    const defs = shorter.template.findResources('AWS::StepFunctions::StateMachine');
    expect(JSON.stringify(Object.values(defs))).toContain('\\"TimeoutSeconds\\":600');
  });
});
