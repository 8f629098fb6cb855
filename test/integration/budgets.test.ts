/**
 * A run's budget through the local stack: the scripted Messages API reports the token usage each
 * turn sets, the deployment's model is priced (Sonnet: $3 per million input tokens, so 100,000
 * input tokens cost $0.30), and the run must stop at exactly the call that spends its budget.
 */
import { describe, expect, it } from 'vitest';
import type { ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { wire } from '../../functions/wiring/wire.js';
import { isSummaryRequest } from '../support/compaction.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

// Priced as Sonnet 4 (prices.ts matches the family).
const local = useLocalStack({ STEPWISE_MODEL: 'claude-sonnet-4-6' });

const costing = (turn: ScriptedTurn, inputTokens: number) => ({
  turn: { ...turn, usage: { inputTokens, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 } },
});
const write = (id: string, path: string) => use([id, 'write_file', { path, content: `# ${path}\n` }]);
const files = async (runId: string) => ((await local.get(`/runs/${runId}/files`)).body.items as { path: string }[]).map((f) => f.path);
/** The results stored for the calls of message `seq`, as the conversation store holds them. */
const resultsOf = async (runId: string, agent: 'single' | 'coder', seq: number) =>
  (await wire(process.env).conversations.loadTurn(conversationIdOf(runId, agent), seq))?.results;

describe('a run’s budget through the agent loop', () => {
  it('stops the run at the exact call that spends it: that turn’s tools do not run, and the cost is what was called', async () => {
    const tag = local.book.add('stop', costing(write('toolu_a', 'a.md'), 100_000), costing(write('toolu_b', 'b.md'), 100_000), { turn: say('never asked') });
    const run = await local.run(`${tag} Write two files.`, { budget: { maxUsd: 0.5 } });

    const message = "The run's budget of $0.5 is spent: it has cost $0.6 so far.";
    expect(run).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: { code: 'BudgetExceeded', message, agent: 'single' },
      budget: { maxUsd: 0.5 },
      iterations: { single: 2 },
      usage: { inputTokens: 200_000, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    });
    expect(run.estimatedCostUsd).toBeCloseTo(0.6, 10);
    expect(local.book.requests.get('stop')).toHaveLength(2);
    expect(await files(run.runId)).toEqual(['a.md']);
    expect(await resultsOf(run.runId, 'single', 3)).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_b', content: `Not run: ${message} The run stopped before this call.`, is_error: true },
    ]);
    const event = local.stack.runtime.events.find((e) => (e.detail as { runId: string }).runId === run.runId);
    expect(event).toMatchObject({ detailType: 'Stepwise Run Failed', detail: { error: { code: 'BudgetExceeded', message }, usage: run.usage } });
  });

  it('stops on tokens as well', async () => {
    const tag = local.book.add('tokens', costing(write('toolu_a', 'a.md'), 600), costing(write('toolu_b', 'b.md'), 600), { turn: say('never asked') });
    const run = await local.run(`${tag} Write two files.`, { budget: { maxTokens: 1_000 } });
    expect(run).toMatchObject({ status: 'failed', error: { code: 'BudgetExceeded', message: "The run's budget of 1,000 tokens is spent: it has used 1,200 so far." } });
    expect(await files(run.runId)).toEqual(['a.md']);
  });

  it('lets a run under its budget succeed, showing the budget beside what it cost', async () => {
    const tag = local.book.add('under', costing(write('toolu_a', 'a.md'), 100_000), costing(say('Done.'), 100_000));
    const run = await local.run(`${tag} Write a file.`, { budget: { maxUsd: 1, maxTokens: 1_000_000 } });
    expect(run).toMatchObject({ status: 'succeeded', budget: { maxUsd: 1, maxTokens: 1_000_000 }, result: { response: 'Done.' } });
    expect(run.estimatedCostUsd).toBeCloseTo(0.6, 10);
  });

  it('counts both agents of a multi-agent run: the Coder stops when the Architect’s spend and its own reach the budget', async () => {
    const plan = { goal: 'Write a.md.', steps: [{ description: 'Write a.md.', action: 'create_file', parameters: { path: 'a.md' } }] };
    const tag = local.book.add('multi', costing(use(['toolu_p', 'finish_plan', plan]), 100_000), costing(write('toolu_c', 'a.md'), 100_000), { turn: say('never asked') });
    const started = await local.post('/runs', { goal: `${tag} Plan and write a.md.`, mode: 'multi', budget: { maxUsd: 0.5 } });
    const run = await local.waitFor(String(started.body.runId));

    expect(run).toMatchObject({
      status: 'failed',
      error: { code: 'BudgetExceeded', message: "The run's budget of $0.5 is spent: it has cost $0.6 so far.", agent: 'coder' },
      usageByAgent: {
        architect: { inputTokens: 100_000, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
        coder: { inputTokens: 100_000, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      },
    });
    expect(local.book.requests.get('multi')).toHaveLength(2);
    expect(await files(run.runId)).toEqual([]);
    expect(await resultsOf(run.runId, 'coder', 1)).toMatchObject([{ tool_use_id: 'toolu_c', is_error: true }]);
  });

  it('counts a compaction summary, and stops before the answer when the summary spends the budget', async () => {
    // 170,000 tokens ($0.51) after the first turn: the next step summarizes first (past 80% of 200K), for $0.03.
    const summary = costing(say('Summary: a.md is written.'), 10_000);
    const tag = local.book.add('summary', costing(write('toolu_a', 'a.md'), 170_000), summary, { turn: say('never asked') });
    const run = await local.run(`${tag} Write a file, then another.`, { budget: { maxUsd: 0.52 } });

    expect(run).toMatchObject({ status: 'failed', error: { code: 'BudgetExceeded', message: "The run's budget of $0.52 is spent: it has cost $0.54 so far." } });
    expect(run.usage.inputTokens).toBe(180_000);
    expect(run.estimatedCostUsd).toBeCloseTo(0.54, 10);
    expect(local.book.requests.get('summary')?.map(isSummaryRequest)).toEqual([false, true]);
  });
});
