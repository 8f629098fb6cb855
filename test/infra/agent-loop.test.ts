import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { transientErrorNames } from '../../functions/core/errors/table.js';
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

/** Transient errors no agent-loop step throws: Step Functions refused the API or the intake, whose callers repeat the request. */
const outsideTheLoop = ['OrchestratorUnavailable'];

interface MachineState {
  Type: string;
  Next?: string;
  End?: boolean;
  Default?: string;
  Choices?: Condition[];
  ItemProcessor?: Machine;
}
interface Machine {
  StartAt: string;
  States: Record<string, MachineState>;
}
type Condition = { Variable?: string; StringEquals?: string; BooleanEquals?: boolean; IsPresent?: boolean; And?: Condition[]; Or?: Condition[]; Next?: string };

/** The value at a `$.a.b[1]` path of `input`. */
const valueAt = (input: unknown, path: string) =>
  path.slice(2).replace(/\[(\d+)\]/g, '.$1').split('.').reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], input);

/** Whether a Choice rule holds for `input` (the comparisons the loop's Choices use). */
function holds(rule: Condition, input: unknown): boolean {
  if (rule.And) return rule.And.every((r) => holds(r, input));
  if (rule.Or) return rule.Or.some((r) => holds(r, input));
  const value = valueAt(input, rule.Variable ?? '$');
  if (rule.StringEquals !== undefined) return value === rule.StringEquals;
  if (rule.BooleanEquals !== undefined) return value === rule.BooleanEquals;
  if (rule.IsPresent !== undefined) return (value !== undefined) === rule.IsPresent;
  throw new Error(`A Choice rule this walk does not know: ${JSON.stringify(rule)}`);
}

/**
 * The states one iteration enters, from Inference until it is back at Inference: what Step
 * Functions bills as transitions. `step` is the state after the step; `item` one Map item (the
 * Map's items are walked once, for one tool call).
 */
function hotPath(machine: Machine, state: unknown, item: unknown = {}): string[] {
  const walk = (m: Machine, from: string, input: unknown, stopAt?: string): string[] => {
    const entered: string[] = [];
    for (let name: string | undefined = from; name !== undefined && name !== stopAt; ) {
      const s: MachineState | undefined = m.States[name];
      if (!s) throw new Error(`No state ${name}`);
      entered.push(name);
      if (entered.length > 50) throw new Error('The walk does not come back to Inference');
      if (s.Type === 'Map' && s.ItemProcessor) entered.push(...walk(s.ItemProcessor, s.ItemProcessor.StartAt, item));
      name = s.Type === 'Choice' ? (s.Choices?.find((rule) => holds(rule, input))?.Next ?? s.Default) : s.End ? undefined : s.Next;
    }
    return entered;
  };
  return ['Inference', ...walk(machine, machine.States.Inference?.Next ?? '', state, 'Inference')];
}

describe('AgentLoop', () => {
  it('loops Inference → Route → Tools → Inference, the bounds checked in the step, with bounded concurrency and small payloads', () => {
    const loop = definitionOf(template, 'AgentLoop');
    const states = loop.States as Record<string, Record<string, unknown>>;
    expect(loop.StartAt).toBe('Begin');
    expect(states.Start).toMatchObject({ Type: 'Pass', Parameters: { segmentEnd: 60, step: { next: 0 } }, Next: 'Inference' });
    expect(states.Inference).toMatchObject({
      Type: 'Task',
      Next: 'Route',
      TimeoutSeconds: 360,
      // The step's result as it is: ids and counters only (invariant 1).
      ResultPath: '$.step',
      Parameters: { 'iteration.$': '$.step.next', 'maxIterations.$': '$.maxIterations', 'segmentEnd.$': '$.segmentEnd' },
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.failure', Next: 'DescribeFailure' }],
    });
    expect(states.Route?.Choices).toEqual([
      {
        And: [
          { Variable: '$.step.stopReason', StringEquals: 'tool_use' },
          // A turn that calls an agent goes through the gate's Map too, where its child run starts.
          {
            Or: [
              { Variable: '$.step.gated', BooleanEquals: true },
              { And: [{ Variable: '$.step.callsAgents', IsPresent: true }, { Variable: '$.step.toolCalls[1]', IsPresent: true }] },
            ],
          },
        ],
        Next: 'GatedTools',
      },
      { And: [{ Variable: '$.step.stopReason', StringEquals: 'tool_use' }, { Variable: '$.step.toolCalls[1]', IsPresent: true }], Next: 'Tools' },
      // A turn's one call of an agent: its nested execution and its tool step, one state more than a tool call.
      { And: [{ Variable: '$.step.stopReason', StringEquals: 'tool_use' }, { Variable: '$.step.toolCalls[0].child', IsPresent: true }], Next: 'RunChildOnly' },
      { And: [{ Variable: '$.step.stopReason', StringEquals: 'tool_use' }, { Variable: '$.step.toolCalls[0]', IsPresent: true }], Next: 'OnlyTool' },
      { Or: [{ Variable: '$.step.stopReason', StringEquals: 'end_turn' }, { Variable: '$.step.stopReason', StringEquals: 'stop_sequence' }], Next: 'Done' },
      { Variable: '$.step.stopReason', StringEquals: 'refusal', Next: 'Refused' },
      { Variable: '$.step.stopReason', StringEquals: 'model_context_window_exceeded', Next: 'ContextFull' },
      { Variable: '$.step.stopReason', StringEquals: 'iteration_limit', Next: 'DescribeLimit' },
      { Variable: '$.step.stopReason', StringEquals: 'continue', Next: 'ContinueAsNew' },
    ]);
    expect(states.MaxIterationsExceeded).toEqual({ Type: 'Fail', Error: 'MaxIterationsExceeded', CausePath: '$.limit.message' });
    // max_tokens, pause_turn and answer_required go straight on to the next step.
    expect(states.Route?.Default).toBe('Inference');
    for (const map of ['Tools', 'GatedTools']) {
      expect(states[map]).toMatchObject({ Type: 'Map', MaxConcurrency: 8, ItemsPath: '$.step.toolCalls', ResultPath: null, Next: 'Inference' });
    }
    expect(states.OnlyTool).toMatchObject({
      Type: 'Task',
      Parameters: { 'toolUseId.$': '$.step.toolCalls[0].id', 'seq.$': '$.step.seq', needsApproval: false },
      ResultPath: null,
      Next: 'Inference',
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.failure', Next: 'DescribeFailure' }],
    });
    expect(states.ContinueAsNew).toMatchObject({
      Type: 'Task',
      Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::states:startExecution.sync:2']] },
      Parameters: { 'StateMachineArn.$': '$$.StateMachine.Id', 'Name.$': "States.Format('{}-{}-{}', $.runId, $.label, $.step.next)", Input: { 'iteration.$': '$.step.next', 'agent.$': '$.agent', 'label.$': '$.label' } },
    });
  });

  it('enters three states per iteration with one tool call, four with several, two with none: a state added to the hot path is noticed', () => {
    const loop = definitionOf(template, 'AgentLoop') as unknown as Machine;
    const call = { id: 'toolu_1', name: 'read_file', needsApproval: false };
    const turn = (calls: unknown[], gated = false) => ({ step: { stopReason: 'tool_use', gated, toolCalls: calls } });
    expect(hotPath(loop, turn([call]))).toEqual(['Inference', 'Route', 'OnlyTool']);
    // Parallel calls: the Map, and each item its tool step (one item walked here).
    expect(hotPath(loop, turn([call, call]), call)).toEqual(['Inference', 'Route', 'Tools', 'Tool']);
    // A tool_use turn whose only call the step answered itself (final_answer) goes straight on.
    expect(hotPath(loop, turn([]))).toEqual(['Inference', 'Route']);
    // max_tokens and pause_turn: the step and the Route, then the next step.
    expect(hotPath(loop, { step: { stopReason: 'max_tokens', gated: false, toolCalls: [] } })).toEqual(['Inference', 'Route']);
    // A turn with a gated call pays for its gate, and only such a turn.
    expect(hotPath(loop, turn([call], true), call)).toEqual(['Inference', 'Route', 'GatedTools', 'NeedsApproval', 'GatedTool']);
  });

  it('retries transient errors with backoff and full jitter, and nothing else', () => {
    const states = definitionOf(template, 'AgentLoop').States as Record<string, { Retry?: Record<string, unknown>[] }>;
    const retries = states.Inference?.Retry ?? [];
    expect(retries.map((r) => r.ErrorEquals)).toEqual([
      ['Lambda.TooManyRequestsException'],
      ['Lambda.ServiceException', 'Lambda.AWSLambdaException', 'Lambda.SdkClientException', 'Lambda.Unknown'],
      ['ModelOverloaded', 'ModelResponseEmpty', 'ModelThrottled', 'ModelUnavailable', 'StoreUnavailable', 'ToolUnavailable', 'WorkspaceUnavailable'],
      ['States.Timeout', 'Sandbox.Timedout'],
    ]);
    for (const retry of retries) expect(retry).toMatchObject({ JitterStrategy: 'FULL', BackoffRate: 2 });
    expect(retries[2]).toMatchObject({ IntervalSeconds: 2, MaxAttempts: 6, MaxDelaySeconds: 60 });
    expect(retries.flatMap((r) => r.ErrorEquals as string[])).not.toContain('States.ALL');
    // An external tool's throttled or failing service is retried in the Map's tool step.
    const map = states.Tools as unknown as { ItemProcessor: { States: Record<string, { Retry?: { ErrorEquals: string[] }[] }> } };
    expect(map.ItemProcessor.States.Tool?.Retry?.flatMap((r) => r.ErrorEquals)).toContain('ToolUnavailable');
  });

  it('holds back on throttles instead of failing: Lambda concurrency retried longest in every Lambda step, nested starts retried on quota and throttle', () => {
    const states = allStates(definitionOf(template, 'AgentLoop').States as Record<string, State>);
    const functionIds = Object.keys(template.findResources('AWS::Lambda::Function'));
    const lambdaSteps = states.filter(([, s]) => s.Type === 'Task' && functionIds.some((id) => JSON.stringify(s).includes(`"${id}"`)));
    expect(lambdaSteps.length).toBeGreaterThan(5);
    for (const [, step] of lambdaSteps) {
      // The first retrier that names an error is the one used: the throttle's own, the longest budget.
      expect(step.Retry?.find((r) => r.ErrorEquals.includes('Lambda.TooManyRequestsException'))).toEqual({
        ErrorEquals: ['Lambda.TooManyRequestsException'],
        IntervalSeconds: 1,
        MaxAttempts: 8,
        BackoffRate: 2,
        MaxDelaySeconds: 30,
        JitterStrategy: 'FULL',
      });
    }
    const starts = states.filter(([, s]) => JSON.stringify(s).includes('startExecution.sync:2')).map(([name, s]) => [name, s.Retry?.[0]?.ErrorEquals]);
    const faults = ['StepFunctions.ExecutionLimitExceededException', 'StepFunctions.AWSStepFunctionsException', 'StepFunctions.SdkClientException'];
    expect(Object.fromEntries(starts)).toEqual({ RunChild: faults, RunChildOnly: faults, ContinueAsNew: faults });
  });

  it('retries, in every Lambda step, each error the error table marks transient', () => {
    const transient: string[] = transientErrorNames();
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
    expect(missing).toEqual({ Inference: [], RequestApproval: [], AwaitDecision: [], GatedTool: [], Tool: [], OnlyTool: [], ChildFailed: [], ChildResult: [], ChildFailedOnly: [], ChildResultOnly: [] });
  });

  it('gates a tool call on a reviewer: .waitForTaskToken bounded by the approval timeout, never retried on timeout', () => {
    const loop = definitionOf(template, 'AgentLoop');
    const processor = (loop.States as Record<string, { ItemProcessor: { StartAt: string; States: Record<string, Record<string, unknown>> } }>).GatedTools
      ?.ItemProcessor;
    const states = processor?.States ?? {};
    expect(processor?.StartAt).toBe('NeedsApproval');
    expect(states.NeedsApproval).toEqual({
      Type: 'Choice',
      Choices: [
        { Variable: '$.item.child', IsPresent: true, Next: 'RunChild' },
        { Variable: '$.needsApproval', BooleanEquals: true, Next: 'RequestApproval' },
      ],
      Default: 'GatedTool',
    });
    // A call of an agent: the step made the child run; its loop runs nested (a failure marks it failed), then the tool step answers.
    expect(states.RunChild).toMatchObject({
      Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::states:startExecution.sync:2']] },
      Parameters: { 'StateMachineArn.$': '$$.StateMachine.Id', 'Name.$': '$.item.child.name', Input: { 'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id' } },
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.childFailure', Next: 'ChildFailed' }],
      Next: 'ChildResult',
    });
    expect(states.ChildFailed).toMatchObject({ Next: 'ChildResult' });
    expect(states.RequestApproval).toMatchObject({ Type: 'Task', ResultPath: '$.approval', Next: 'AlreadyDecided' });
    expect(states.AlreadyDecided).toMatchObject({ Choices: [{ Variable: '$.approval.decided', BooleanEquals: true, Next: 'GatedTool' }], Default: 'AnnounceApproval' });
    const approvalFn = { 'Fn::GetAtt': [logicalIdOf(template, 'ApprovalFunction', 'AWS::Lambda::Function'), 'Arn'] };
    const wait = states.AwaitDecision as { Retry: { ErrorEquals: string[] }[]; Catch: unknown[] } & Record<string, unknown>;
    expect(wait).toMatchObject({
      Type: 'Task',
      Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':states:::lambda:invoke.waitForTaskToken']] },
      Parameters: { FunctionName: approvalFn, Payload: { step: 'await', 'toolUseId.$': '$.toolUseId', 'token.$': '$$.Task.Token' } },
      TimeoutSeconds: 86_400,
      Next: 'GatedTool',
    });
    expect(wait.HeartbeatSeconds).toBeUndefined();
    // A reviewer's silence is not a fault to retry: it ends in the tool step, denied with reason timeout.
    expect(wait.Retry.flatMap((r) => r.ErrorEquals)).not.toContain('States.Timeout');
    expect(wait.Catch).toEqual([{ ErrorEquals: ['States.Timeout', 'ApprovalDecided'], ResultPath: null, Next: 'GatedTool' }]);
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
    expect(states.GatedTool).toMatchObject({ Parameters: { 'needsApproval.$': '$.needsApproval' }, End: true });

    const shorter = synthesize((app) => new StepwiseStack(app, 'Short', { approvalTimeout: Duration.minutes(10) }));
    const defs = shorter.template.findResources('AWS::StepFunctions::StateMachine');
    expect(JSON.stringify(Object.values(defs))).toContain('\\"TimeoutSeconds\\":600');
  });
});
