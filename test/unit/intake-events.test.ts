/**
 * The event intake's end states: a run started, an event Lambda should deliver again (it throws),
 * or an event in the dead letters with its reason. Nothing in between: nothing is dropped.
 */
import { describe, expect, it } from 'vitest';
import { OrchestratorUnavailable } from '../../functions/adapters/aws/intake.js';
import { type DeadLetters, type IntakeDeps, type OrchestratorInput, SessionBusy } from '../../functions/core/intake/types.js';
import { intakeEvent } from '../../functions/core/intake/events.js';
import type { Run } from '../../functions/core/runs/types.js';
import { MemorySessions, RecordingStarter } from '../support/api.js';
import { MemoryRunStore } from '../support/memory.js';

type Letter = Parameters<DeadLetters['send']>[0];

/** A starter whose next starts fail with the given errors, then succeed. */
class FailingStarter extends RecordingStarter {
  constructor(private readonly failures: Error[]) {
    super();
  }
  override async start(input: OrchestratorInput): Promise<void> {
    const failure = this.failures.shift();
    if (failure) throw failure;
    await super.start(input);
  }
}

function intake(extra: Partial<IntakeDeps> = {}, send?: DeadLetters['send']) {
  const runs = new MemoryRunStore();
  const letters: Letter[] = [];
  const created: Run[] = [];
  const deps = {
    runs,
    starter: new RecordingStarter(),
    newId: () => 'run-unused',
    sessions: new MemorySessions(),
    onCreated: (run: Run) => void created.push(run),
    deadLetters: { send: send ?? (async (letter: Letter) => void letters.push(letter)) },
    ...extra,
  };
  return { deps, runs, letters, created };
}

const event = (id: string, detail: Record<string, unknown> = {}) => ({
  id,
  'detail-type': 'Stepwise Run Requested',
  source: 'app.orders',
  account: '123456789012',
  detail: { goal: 'Say hi.', mode: 'single', ...detail },
});

describe('intakeEvent', () => {
  it('takes a run that gates a configured MCP tool, and dead-letters one that gates a tool the deployment does not have, naming the field', async () => {
    const { deps, runs, letters } = intake({ externalToolNames: { mcpServers: ['docs'], lambdaTools: [] } });
    await expect(intakeEvent(event('e1', { approvals: { tools: ['docs__search'] } }), deps)).resolves.toEqual({ accepted: true, runId: 'evt-e1' });
    expect((await runs.get('evt-e1'))?.approvals).toEqual({ tools: ['docs__search'], layers: [{ from: 'run', tools: ['docs__search'] }] });
    await expect(intakeEvent(event('e2', { approvals: { tools: ['word_count'] } }), deps)).resolves.toMatchObject({ accepted: false });
    expect(letters.map((l) => l.issues.map((i) => i.path))).toEqual([['detail.approvals.tools.0']]);
    expect([...runs.runs.keys()]).toEqual(['evt-e1']);
  });

  it('throws on a busy session, writing nothing, so that Lambda delivers the event again; the redelivery starts it once the session is free', async () => {
    const { deps, runs, letters } = intake();
    await intakeEvent(event('e1', { sessionId: 's1' }), deps);
    const busy = intakeEvent(event('e2', { sessionId: 's1' }), deps);

    await expect(busy).rejects.toBeInstanceOf(SessionBusy);
    expect([[...runs.runs.keys()], letters]).toEqual([['evt-e1'], []]);
    await runs.finish('evt-e1', { status: 'succeeded', phase: 'complete' });
    await expect(intakeEvent(event('e2', { sessionId: 's1' }), deps)).resolves.toEqual({ accepted: true, runId: 'evt-e2' });
  });

  it('throws on a throttled start, leaving the run to start; the redelivery starts it, counted as one run', async () => {
    const starter = new FailingStarter([new OrchestratorUnavailable('Starting the run failed after retries (ThrottlingException).')]);
    const { deps, runs, letters, created } = intake({ starter });

    await expect(intakeEvent(event('e1'), deps)).rejects.toBeInstanceOf(OrchestratorUnavailable);
    expect((await runs.get('evt-e1'))?.status).toBe('running');
    await expect(intakeEvent(event('e1'), deps)).resolves.toEqual({ accepted: true, runId: 'evt-e1' });
    expect([starter.started.map((s) => s.runId), created.map((r) => r.runId), letters]).toEqual([['evt-e1'], ['evt-e1'], []]);
  });

  it('sends an event whose start Step Functions refuses for good to the dead letters with the reason, and records the run failed', async () => {
    const refusal = Object.assign(new Error('State machine does not exist.'), { name: 'StateMachineDoesNotExist' });
    const { deps, runs, letters } = intake({ starter: new FailingStarter([refusal]) });
    const sent = event('e1');

    const outcome = await intakeEvent(sent, deps);

    const reason = 'The run could not be started: State machine does not exist.';
    expect(outcome).toEqual({ accepted: false, reason });
    expect(letters).toEqual([{ reason, issues: [{ path: '(event)', message: reason }], event: sent }]);
    expect(await runs.get('evt-e1')).toMatchObject({ status: 'failed', error: { code: 'StartFailed' } });
  });

  it('throws when the dead letter itself cannot be sent, so that the event is delivered again rather than dropped', async () => {
    const { deps } = intake({}, async () => {
      throw new Error('SQS is down.');
    });
    await expect(intakeEvent({ 'detail-type': 'Stepwise Run Requested', detail: { goal: '' } }, deps)).rejects.toThrow('SQS is down.');
  });

  it('tells its hook of a run once, however often the event is delivered', async () => {
    const { deps, created } = intake();
    for (let i = 0; i < 3; i++) await intakeEvent(event('e1'), deps);
    expect(created.map((r) => [r.runId, r.mode])).toEqual([['evt-e1', 'single']]);
  });
});
