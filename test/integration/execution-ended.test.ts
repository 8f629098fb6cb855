/**
 * Nothing stuck: an orchestrator execution stopped outside Stepwise (as from the console) leaves
 * no run `running` and no session locked, through the same rule pattern and handler as deployed.
 */
import { describe, expect, it } from 'vitest';
import type { LocalEvent, LocalHandler } from '../../local/runtime/runtime.js';
import { say } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

/** Invocations of the execution-ended function to fail before they work, as a throttled store would. */
let failEndedInvocations = 0;
const throttleOnce = (name: string, handler: LocalHandler): LocalHandler =>
  name === 'execution-ended'
    ? async (event) => {
        if (failEndedInvocations > 0) {
          failEndedInvocations--;
          throw Object.assign(new Error('Rate exceeded'), { name: 'StoreUnavailable' });
        }
        return handler(event);
      }
    : handler;

const local = useLocalStack({}, { wrapHandler: throttleOnce });

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('an orchestrator execution stopped outside Stepwise', () => {
  it('ends its run failed with ExecutionAborted, frees its session for the next run, and a redelivered status event changes nothing', async () => {
    const session = `stopped-${Date.now()}`;
    const tag = local.book.add('stopped', { turn: say('too late'), delayMs: 1_500 }, { turn: say('next one') });
    const started = await local.post('/runs', { goal: `${tag} Take your time.`, mode: 'single', sessionId: session });
    expect(started.status).toBe(202);
    const runId = String(started.body.runId);
    // Stopped while the agent is at work: the model has the request.
    await until('the model call', () => (local.book.requests.get('stopped')?.length ? true : undefined));
    const execution = await until('the orchestrator execution', () => local.stack.runtime.list().find((e) => e.name === runId));
    // Its first two invocations fail: the asynchronous invocation's retries mark the run all the same.
    failEndedInvocations = 2;
    local.stack.runtime.stop(execution.executionArn, 'Stopped', 'Stopped from the console.');

    const run = await local.waitFor(runId, 10_000);
    expect(run).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: {
        code: 'ExecutionAborted',
        message: "The run's orchestrator execution was stopped outside Stepwise (Stopped: Stopped from the console.).",
        agent: 'single',
      },
    });
    expect(run.currentAgent).toBeUndefined();
    expect(failEndedInvocations).toBe(0);
    // It no longer counts as running.
    const listed = (await local.get('/runs?status=running')).body.items as { runId: string }[];
    expect(listed.map((r) => r.runId)).not.toContain(runId);

    const next = await local.run(`${tag} And now?`, { sessionId: session });
    expect(next.status).toBe('succeeded');

    const statusEvent = local.stack.runtime.events.find(
      (e: LocalEvent) => e.source === 'aws.states' && (e.detail as { executionArn?: string }).executionArn === execution.executionArn,
    );
    expect(statusEvent).toMatchObject({ detailType: 'Step Functions Execution Status Change', eventBusName: 'default', detail: { status: 'ABORTED' } });
    const before = (await local.get(`/runs/${runId}`)).body;
    await local.stack.redeliver(String(statusEvent?.id));
    expect((await local.get(`/runs/${runId}`)).body).toEqual(before);
    expect((await local.get(`/runs/${next.runId}`)).body).toMatchObject({ status: 'succeeded' });
    expect((await local.get('/_local/dead-letters')).body.items).toEqual([]);
  });

  it('leaves a run cancelled through the API as cancelled', async () => {
    const tag = local.book.add('cancel', { turn: say('never mind'), delayMs: 1_000 });
    const started = await local.post('/runs', { goal: `${tag} Wait.`, mode: 'single' });
    const runId = String(started.body.runId);
    await until('the model call', () => (local.book.requests.get('cancel')?.length ? true : undefined));
    expect((await local.post(`/runs/${runId}/cancel`, {})).status).toBe(202);
    await local.stack.runtime.idle();
    expect((await local.get(`/runs/${runId}`)).body).toMatchObject({ status: 'cancelled', phase: 'cancelled' });
    expect((await local.get(`/runs/${runId}`)).body.error).toBeUndefined();
  });
});
