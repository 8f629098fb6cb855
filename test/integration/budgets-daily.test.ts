/**
 * The daily budget per caller through the local stack: $1 a day, a default run budget of $5, and
 * a priced model (100,000 input tokens cost $0.30). Runs are counted toward the UTC day they
 * started; a test run within a few seconds of midnight UTC could see its runs counted toward
 * another day than the check reads.
 */
import { describe, expect, it } from 'vitest';
import type { ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import type { RunView } from '../../functions/api/schemas.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack({ STEPWISE_MODEL: 'claude-sonnet-4-6', STEPWISE_DAILY_MAX_USD: '1', STEPWISE_DEFAULT_RUN_MAX_USD: '5' });

const costing = (turn: ScriptedTurn, inputTokens: number) => ({
  turn: { ...turn, usage: { inputTokens, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 } },
});

/** Polls the run until it ends (`waitFor` would wait for every execution to idle, run A's wait for a reviewer too). */
async function ended(runId: string): Promise<RunView> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = (await local.get(`/runs/${runId}`)).body as unknown as RunView;
    if (run.status !== 'running') return run;
    if (Date.now() > deadline) throw new Error(`Run ${runId} is still running.`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the daily budget of a caller', () => {
  it('stops the run that spends it, refuses new runs with 429, and stops a running one at its next step', async () => {
    const day = new Date().toISOString().slice(0, 10);
    // Run A spends $0.30 and waits for a reviewer before its calculator call runs.
    const a = local.book.add('a', costing(use(['toolu_a', 'calculator', { operation: 'add', a: 1, b: 2 }]), 100_000), { turn: say('never asked') });
    const startedA = await local.post('/runs', { goal: `${a} Add.`, mode: 'single', approvals: { tools: ['calculator'] } });
    const runA = String(startedA.body.runId);
    expect(await local.waitingOn(runA, 1)).toMatchObject({ status: 'running', budget: { maxUsd: 5 } });

    // Run B spends $0.90: the day reaches $1.20, so B ends at that call.
    const b = local.book.add('b', costing(say('Done.'), 300_000));
    const startedB = await local.post('/runs', { goal: `${b} Answer.`, mode: 'single' });
    const runB = await ended(String(startedB.body.runId));
    const spent = `The daily budget of $1 per caller is spent: your runs have spent $1.2 on ${day} (UTC).`;
    expect(runB).toMatchObject({ status: 'failed', error: { code: 'BudgetExceeded', message: spent } });

    // A new run is refused at intake, and nothing is written.
    const before = ((await local.get('/runs')).body.items as unknown[]).length;
    const refused = await local.post('/runs', { goal: 'One more.', mode: 'single' });
    expect(refused).toEqual({ status: 429, body: { error: { code: 'BudgetExceeded', message: `${spent} Runs can start again tomorrow (UTC).` } } });
    expect(((await local.get('/runs')).body.items as unknown[]).length).toBe(before);

    // Run A goes on once its call is approved: the tool runs, and the next model call is refused.
    expect((await local.post(`/runs/${runA}/approvals/toolu_a`, { decision: 'approve' })).status).toBe(202);
    const endedA = await local.waitFor(runA);
    expect(endedA).toMatchObject({ status: 'failed', error: { code: 'BudgetExceeded', message: spent, agent: 'single' }, iterations: { single: 1 } });
    expect(local.book.requests.get('a')).toHaveLength(1);
    expect(endedA.result).toBeUndefined();
  });
});
