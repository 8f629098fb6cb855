/** Runs whose orchestrator execution ended outside its states are marked, once, and free their session. */
import { describe, expect, it } from 'vitest';
import { type EndedStatus, executionEndedPattern, markEndedRun } from '../../functions/core/runs/execution-ended.js';
import { createRun } from '../../functions/core/intake/create.js';
import { MemorySessions, RecordingStarter } from '../support/api.js';
import { MemoryRunStore } from '../support/memory.js';

const orchestratorArn = 'arn:aws:states:us-east-1:123456789012:stateMachine:Orchestrator';
const caller = { principal: 'arn:aws:iam::123456789012:user/alice', scopes: [] };

function statusChange(name: string, status: EndedStatus | 'SUCCEEDED', extra: { input?: string | null; stateMachineArn?: string; error?: string; cause?: string } = {}) {
  return {
    'detail-type': 'Step Functions Execution Status Change',
    source: 'aws.states',
    detail: {
      executionArn: `${orchestratorArn.replace(':stateMachine:', ':execution:')}:${name}`,
      stateMachineArn: extra.stateMachineArn ?? orchestratorArn,
      name,
      status,
      input: extra.input === undefined ? JSON.stringify({ runId: name, mode: 'single' }) : extra.input,
      ...(extra.error ? { error: extra.error } : {}),
      ...(extra.cause ? { cause: extra.cause } : {}),
    },
  };
}

/** A running single-mode run on session `s1`, with its agent at work. */
async function runningRun(runId = 'run-1') {
  const runs = new MemoryRunStore();
  const sessions = new MemorySessions();
  const intake = { runs, sessions, starter: new RecordingStarter(), newId: () => runId };
  await createRun({ goal: 'Go.', mode: 'single', maxIterations: 5, sessionId: 's1' }, intake, { caller });
  const stored = runs.runs.get(runId);
  if (stored) stored.currentAgent = 'single';
  return { runs, sessions, intake, deps: { runs, sessions, orchestratorArn } };
}

describe('markEndedRun', () => {
  it.each([
    ['ABORTED', 'ExecutionAborted', "The run's orchestrator execution was stopped outside Stepwise (Stopped: from the console)."],
    ['TIMED_OUT', 'ExecutionTimedOut', "The run did not finish within the orchestrator's time limit (States.Timeout: took too long)."],
    ['FAILED', 'ExecutionFailed', "The run's orchestrator execution failed where no state recorded it (States.Runtime: bad path)."],
  ] as const)('marks a running run failed when its execution ends %s, naming the agent, and frees the session', async (status, code, message) => {
    const { runs, sessions, deps } = await runningRun();
    const [error, cause] = message.slice(message.indexOf('(') + 1, -2).split(': ');

    const outcome = await markEndedRun(statusChange('run-1', status, { ...(error ? { error } : {}), ...(cause ? { cause } : {}) }), deps);

    const expected = { code, message, agent: 'single' };
    expect(outcome).toEqual({ marked: true, runId: 'run-1', status, error: expected });
    expect(await runs.get('run-1')).toMatchObject({ status: 'failed', phase: 'failed', error: expected });
    expect((await runs.get('run-1'))?.currentAgent).toBeUndefined();
    expect([...sessions.holders]).toEqual([]);
  });

  it('fails its child runs and theirs that are still running, and leaves an ended child as it is', async () => {
    const { runs, deps } = await runningRun();
    const base = (runId: string) => ({ ...structuredClone(runs.runs.get('run-1')!), runId, sessionId: undefined, parentRunId: 'run-1' });
    await runs.create({ ...base('child-1'), children: { toolu_g: { runId: 'grandchild', agent: 'helper' } } });
    await runs.create(base('grandchild'));
    await runs.create({ ...base('child-2'), status: 'succeeded', phase: 'complete' });
    await runs.addChild('run-1', 'toolu_1', { runId: 'child-1', agent: 'helper' });
    await runs.addChild('run-1', 'toolu_2', { runId: 'child-2', agent: 'helper' });

    await markEndedRun(statusChange('run-1', 'TIMED_OUT'), deps);

    for (const id of ['child-1', 'grandchild']) {
      expect(await runs.get(id)).toMatchObject({ status: 'failed', error: { code: 'ExecutionTimedOut', message: expect.stringMatching(/^Its parent run (run-1|child-1) ended: The run did not finish/), agent: 'helper' } });
    }
    expect(await runs.get('child-2')).toMatchObject({ status: 'succeeded' });
  });

  it('fails the running child runs of a run its own states recorded failed (the execution ends FAILED at RunFailed)', async () => {
    const { runs, deps } = await runningRun();
    const base = (runId: string) => ({ ...structuredClone(runs.runs.get('run-1')!), runId, sessionId: undefined, parentRunId: 'run-1' });
    await runs.create(base('child-1'));
    await runs.addChild('run-1', 'toolu_1', { runId: 'child-1', agent: 'helper' });
    const own = { code: 'ToolFailed', message: 'The calculator broke.', agent: 'single' };
    await runs.failIfRunning('run-1', own);

    const outcome = await markEndedRun(statusChange('run-1', 'FAILED', { error: 'ToolFailed', cause: 'The calculator broke.' }), deps);

    expect(outcome).toEqual({ marked: false, runId: 'run-1', reason: 'The run is failed already.' });
    expect(await runs.get('run-1')).toMatchObject({ status: 'failed', error: own });
    expect(await runs.get('child-1')).toMatchObject({ status: 'failed', error: { code: 'ToolFailed', message: 'Its parent run run-1 ended: The calculator broke.', agent: 'helper' } });
  });

  it('changes nothing when the same event is delivered again, and leaves a session another run took over', async () => {
    const { runs, sessions, intake, deps } = await runningRun();
    const event = statusChange('run-1', 'ABORTED');
    await markEndedRun(event, deps);
    const marked = await runs.get('run-1');
    await createRun({ goal: 'Next.', mode: 'single', maxIterations: 5, sessionId: 's1' }, { ...intake, newId: () => 'run-2' }, { caller });

    expect(await markEndedRun(event, deps)).toEqual({ marked: false, runId: 'run-1', reason: 'The run is failed already.' });
    expect(await runs.get('run-1')).toEqual(marked);
    expect([...sessions.holders.values()]).toEqual(['run-2']);
  });

  it('leaves a run that a cancel (or its own states) ended as it is, and frees its session', async () => {
    const { runs, sessions, deps } = await runningRun();
    await runs.cancel('run-1');
    expect(await markEndedRun(statusChange('run-1', 'ABORTED', { error: 'Cancelled' }), deps)).toEqual({
      marked: false,
      runId: 'run-1',
      reason: 'The run is cancelled already.',
    });
    expect(await runs.get('run-1')).toMatchObject({ status: 'cancelled', phase: 'cancelled' });
    expect([...sessions.holders]).toEqual([]);
  });

  it('ignores the cancel announcement, other state machines and executions that succeeded', async () => {
    const { runs, sessions, deps } = await runningRun();
    const announcement = statusChange('run-1-cancelled', 'FAILED', { input: JSON.stringify({ runId: 'run-1', announce: 'cancelled' }) });
    const child = statusChange('run-1-single', 'ABORTED', { stateMachineArn: orchestratorArn.replace('Orchestrator', 'AgentLoop') });
    const outcomes = [
      await markEndedRun(announcement, deps),
      await markEndedRun(child, deps),
      await markEndedRun(statusChange('run-1', 'SUCCEEDED'), deps),
      await markEndedRun({ 'detail-type': 'Stepwise Run Requested' }, deps),
    ];
    expect(outcomes.map((o) => o.marked)).toEqual([false, false, false, false]);
    expect(await runs.get('run-1')).toMatchObject({ status: 'running' });
    expect([...sessions.holders.values()]).toEqual(['run-1']);
  });

  it('finds the run by the execution name when the event carries no input', async () => {
    const { runs, deps } = await runningRun();
    expect(await markEndedRun(statusChange('run-1', 'TIMED_OUT', { input: null }), deps)).toMatchObject({ marked: true, runId: 'run-1' });
    expect(await runs.get('run-1')).toMatchObject({ status: 'failed', error: { code: 'ExecutionTimedOut' } });
  });
});

describe('executionEndedPattern', () => {
  it('matches the ABORTED, TIMED_OUT and FAILED status changes of the orchestrator only', () => {
    expect(executionEndedPattern(orchestratorArn)).toEqual({
      source: ['aws.states'],
      detailType: ['Step Functions Execution Status Change'],
      detail: { stateMachineArn: [orchestratorArn], status: ['ABORTED', 'TIMED_OUT', 'FAILED'] },
    });
  });
});

describe('markEndedRun reasons', () => {
  it('says why it left each event alone', async () => {
    const { deps } = await runningRun();
    expect([
      await markEndedRun(statusChange('run-1-cancelled', 'FAILED', { input: JSON.stringify({ runId: 'run-1', announce: 'cancelled' }) }), deps),
      await markEndedRun(statusChange('run-1', 'ABORTED', { stateMachineArn: orchestratorArn.replace('Orchestrator', 'AgentLoop') }), deps),
      await markEndedRun(statusChange('run-1', 'SUCCEEDED'), deps),
      await markEndedRun({ 'detail-type': 'Stepwise Run Requested' }, deps),
      await markEndedRun(statusChange('run-9', 'ABORTED'), deps),
    ]).toEqual([
      { marked: false, reason: 'An announcement, not a run.' },
      { marked: false, reason: 'Not an orchestrator execution.' },
      { marked: false, reason: 'The execution succeeded; its states recorded the run.' },
      { marked: false, reason: 'Not a Step Functions execution status change.' },
      { marked: false, runId: 'run-9', reason: 'No such run.' },
    ]);
  });

  it('marks nothing when the run ended between reading it and failing it, and still frees its session', async () => {
    const { runs, sessions, deps } = await runningRun();
    runs.failIfRunning = async () => false;
    expect(await markEndedRun(statusChange('run-1', 'ABORTED'), deps)).toEqual({ marked: false, runId: 'run-1', reason: 'The run ended meanwhile.' });
    expect([...sessions.holders]).toEqual([]);
  });
});

describe('markEndedRun messages', () => {
  it.each([
    [{}, "The run's orchestrator execution was stopped outside Stepwise."],
    [{ error: 'Stopped' }, "The run's orchestrator execution was stopped outside Stepwise (Stopped)."],
    [{ cause: 'from the console' }, "The run's orchestrator execution was stopped outside Stepwise (from the console)."],
  ])('names only the error and cause the event carries: %j', async (extra, message) => {
    const { deps } = await runningRun();
    expect(await markEndedRun(statusChange('run-1', 'ABORTED', extra), deps)).toEqual({
      marked: true,
      runId: 'run-1',
      status: 'ABORTED',
      error: { code: 'ExecutionAborted', message, agent: 'single' },
    });
  });
});

describe('markEndedRun run ids', () => {
  it('takes the run id from the execution input over the execution name', async () => {
    const { deps } = await runningRun();
    expect(await markEndedRun(statusChange('exec-1', 'FAILED', { input: JSON.stringify({ runId: 'run-1', mode: 'single' }) }), deps)).toMatchObject({
      marked: true,
      runId: 'run-1',
    });
  });

  it.each(['', 'not json'])('falls back to the execution name when the input is %j', async (input) => {
    const { deps } = await runningRun();
    expect(await markEndedRun(statusChange('run-1', 'FAILED', { input }), deps)).toMatchObject({ marked: true, runId: 'run-1' });
  });

  it('releases no session for a run that has none', async () => {
    const runs = new MemoryRunStore();
    const released: string[] = [];
    const sessions = new MemorySessions();
    sessions.release = async (sessionId: string) => {
      released.push(sessionId);
    };
    await createRun({ goal: 'Go.', mode: 'single', maxIterations: 5 }, { runs, sessions, starter: new RecordingStarter(), newId: () => 'run-1' }, { caller });
    expect(await markEndedRun(statusChange('run-1', 'ABORTED'), { runs, sessions, orchestratorArn })).toMatchObject({ marked: true });
    expect(released).toEqual([]);
  });
});
