/**
 * 50 multi-agent runs started at once on the local runtime: all succeed, every conversation has
 * consecutive sequence numbers with no duplicate or gap, and the run records agree with the
 * messages. Wall time and peak memory are printed (not asserted: numbers live in the bench).
 */
import { describe, expect, it } from 'vitest';
import { wire } from '../../functions/wiring/wire.js';
import { conversationIdOf } from '../../functions/core/conversation.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();
const runs = 50;

describe('load', () => {
  it(`runs ${runs} multi-agent runs at once without losing or duplicating a message`, async () => {
    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
    const started = Date.now();
    const ids = await Promise.all(
      Array.from({ length: runs }, async (_, i) => {
        const tag = local.book.add(
          `load-${i}`,
          { turn: use([`toolu_p${i}`, 'finish_plan', { goal: `File ${i}`, steps: [{ description: `Write f${i}.txt`, action: 'create_file' }] }]) },
          { turn: use([`toolu_w${i}`, 'write_file', { path: `f${i}.txt`, content: `run ${i}` }], [`toolu_c${i}`, 'calculator', { operation: 'add', a: i, b: i }]) },
          { turn: say(`done ${i}`) },
        );
        const res = await local.post('/runs', { goal: `${tag} Write file ${i}.` });
        expect(res.status).toBe(202);
        return String(res.body.runId);
      }),
    );
    const finished = await Promise.all(ids.map((id) => local.waitFor(id, 240_000)));
    const wallMs = Date.now() - started;
    clearInterval(sampler);

    expect(finished.map((r) => r.status)).toEqual(Array(runs).fill('succeeded'));
    const { conversations } = wire(process.env);
    for (const [i, run] of finished.entries()) {
      for (const agent of ['architect', 'coder'] as const) {
        const { messages } = await conversations.load(conversationIdOf(run.runId, agent));
        expect(messages.map((m) => m.seq)).toEqual(messages.map((_, n) => n));
        const assistantTurns = messages.filter((m) => m.role === 'assistant').length;
        expect(run.iterations[agent]).toBe(assistantTurns);
        if (agent === 'coder') {
          expect(messages[2]?.content.map((b) => (b as { tool_use_id?: string }).tool_use_id)).toEqual([`toolu_w${i}`, `toolu_c${i}`]);
        }
      }
      expect(run.result?.actionsTaken).toEqual([`write_file {"path":"f${i}.txt","content":"run ${i}"}`, `calculator {"operation":"add","a":${i},"b":${i}}`]);
      const usage = run.usage.inputTokens + run.usage.outputTokens;
      expect(usage).toBeGreaterThan(0);
    }
    console.info(JSON.stringify({ test: `${runs} concurrent multi-agent runs`, wallMs, peakRssMiB: Math.round(peakRss / 1024 / 1024) }));
  }, 300_000);
});
