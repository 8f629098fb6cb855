import { describe, expect, it } from 'vitest';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();

describe('a long run', () => {
  it('runs 200 iterations with 100 KB tool outputs while every state payload stays small', async () => {
    const big = 'x'.repeat(100 * 1024);
    const tag = local.book.respondWith('long', (_body, n) => {
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
    console.info(JSON.stringify({ test: '200-iteration run', wallMs, largestPayloadBytes: largest, transitions }));
    expect(largest).toBeLessThan(8 * 1024);
    // The model saw each 100 KB output cut to its view, with the note saying so.
    const last = local.book.requests.get('long')?.at(-1)?.messages.at(-1)?.content as { content: string }[];
    expect(last[0]?.content).toMatch(/\[Output truncated: showing the first 30000 of 102400 characters; the full output is stored with the run\.\]$/);
  }, 300_000);
});
