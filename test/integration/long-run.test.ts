import { describe, expect, it } from 'vitest';
import { say, use } from '../support/agents.js';
import { isSummaryRequest } from '../support/compaction.js';
import { useLocalStack } from '../support/local-stack.js';

// Compaction is what this run shows: context editing, on by default, would keep it under the threshold.
const local = useLocalStack({ STEPWISE_CONTEXT_EDITING: 'off' });

describe('a long run', () => {
  it('runs 200 iterations with 100 KB tool outputs while every state payload stays small, compacting as it goes', async () => {
    const big = 'x'.repeat(100 * 1024);
    // 30,000 characters of each output reach the model: the 200K window fills every dozen or so turns.
    let summaries = 0;
    let n = -1;
    const tag = local.book.respondWith('long', (body) => {
      if (isSummaryRequest(body)) return { turn: say(`[[long]] Summary ${++summaries}: big.txt was written and read ${n} times.`) };
      n++;
      if (n === 0) return { turn: use(['toolu_w', 'write_file', { path: 'big.txt', content: big }]) };
      if (n < 199) return { turn: use([`toolu_${n}`, 'read_file', { path: 'big.txt' }]) };
      return { turn: say('Read it 198 times.') };
    });
    const started = Date.now();
    const run = await local.run(`${tag} Read a big file again and again.`, { maxIterations: 200 });
    const wallMs = Date.now() - started;

    expect(run).toMatchObject({ status: 'succeeded', iterations: { single: 200 }, result: { response: 'Read it 198 times.' } });
    const executions = local.stack.runtime.list().filter((e) => e.name.startsWith(run.runId));
    const largest = Math.max(...executions.map((e) => e.maxPayloadBytes));
    const transitions = executions.reduce((n, e) => n + e.transitions, 0);
    console.info(JSON.stringify({ test: '200-iteration run', wallMs, largestPayloadBytes: largest, transitions, summaries }));
    expect(largest).toBeLessThan(8 * 1024);
    expect(summaries).toBeGreaterThan(5);
    // Every request fits the window: about 4 characters a token.
    for (const body of local.book.requests.get('long') ?? []) expect(JSON.stringify(body).length / 4).toBeLessThan(200_000);
    // The model saw each 100 KB output cut to its view, with the note saying so.
    const last = local.book.requests.get('long')?.at(-1)?.messages.at(-1)?.content as { content: string }[];
    expect(last[0]?.content).toMatch(/\[Output truncated: showing the first 30000 of 102400 characters; the full output is stored with the run\.\]$/);
  }, 300_000);
});
