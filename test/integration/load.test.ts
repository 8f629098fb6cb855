/**
 * 50 multi-agent runs started at once on the local runtime, with a Lambda crash injected into
 * every run: its write_file step, its edit_file step and one Coder inference step each die once
 * after doing their work, before returning, and are retried by the state machine. All runs
 * succeed, every conversation has consecutive sequence numbers with no duplicate or gap, each
 * turn reached the model once, each edit landed once, and the run records agree with the
 * messages. Wall time and peak memory are printed (not asserted: numbers live in the bench).
 */
import { describe, expect, it } from 'vitest';
import { wire } from '../../functions/wiring/wire.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import type { LocalHandler } from '../../local/runtime/runtime.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

/** The steps that die once after their work, by function, agent and tool call or iteration. */
const crashed = new Set<string>();
function crashOnceAfterWork(name: string, handler: LocalHandler): LocalHandler {
  return async (event) => {
    const result = await handler(event);
    const e = event as { runId: string; agent?: string; iteration?: number; toolUseId?: string };
    const target =
      (name === 'tool' && /^toolu_[we]\d+$/.test(e.toolUseId ?? '')) || (name === 'inference' && e.agent === 'coder' && e.iteration === 1);
    const key = `${name}:${e.runId}:${e.agent}:${e.toolUseId ?? e.iteration}`;
    if (target && !crashed.has(key)) {
      crashed.add(key);
      throw Object.assign(new Error('Runtime exited before returning'), { name: 'Lambda.Unknown' });
    }
    return result;
  };
}

const local = useLocalStack({}, { wrapHandler: crashOnceAfterWork });
const runs = 32;

describe('load', () => {
  it(`runs ${runs} multi-agent runs at once, each step crashed once after its work, without losing or duplicating a message or an edit`, async () => {
    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
    const started = Date.now();
    const ids = await Promise.all(
      Array.from({ length: runs }, async (_, i) => {
        const tag = local.book.add(
          `load-${i}`,
          { turn: use([`toolu_p${i}`, 'finish_plan', { goal: `File ${i}`, steps: [{ description: `Write f${i}.txt`, action: 'create_file' }] }]) },
          { turn: use([`toolu_w${i}`, 'write_file', { path: `f${i}.txt`, content: `run ${i}` }], [`toolu_c${i}`, 'calculator', { operation: 'add', a: i, b: i }]) },
          { turn: use([`toolu_e${i}`, 'edit_file', { path: `f${i}.txt`, old_string: `run ${i}`, new_string: `run ${i} edited` }]) },
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
    // The faults happened: three crashes in every run.
    for (const id of ids) expect([...crashed].filter((key) => key.includes(`:${id}:`))).toHaveLength(3);
    const { conversations, workspaceFor } = wire(process.env);
    for (const [i, run] of finished.entries()) {
      // One model call per scripted turn: a retried inference step answered from the store.
      expect(local.book.requests.get(`load-${i}`)).toHaveLength(4);
      for (const agent of ['architect', 'coder'] as const) {
        const { messages } = await conversations.load(conversationIdOf(run.runId, agent));
        expect(messages.map((m) => m.seq)).toEqual(messages.map((_, n) => n));
        const assistantTurns = messages.filter((m) => m.role === 'assistant').length;
        expect(run.iterations[agent]).toBe(assistantTurns);
        if (agent === 'coder') {
          const resultIds = (seq: number) => messages[seq]?.content.map((b) => (b as { tool_use_id?: string }).tool_use_id);
          expect([resultIds(2), resultIds(4)]).toEqual([[`toolu_w${i}`, `toolu_c${i}`], [`toolu_e${i}`]]);
        }
      }
      // The edit landed once: applied twice, it would read "run i edited edited".
      expect(new TextDecoder().decode(await workspaceFor(run.runId).read(`f${i}.txt`))).toBe(`run ${i} edited`);
      expect(run.result?.actionsTaken).toEqual([
        `write_file {"path":"f${i}.txt","content":"run ${i}"}`,
        `calculator {"operation":"add","a":${i},"b":${i}}`,
        `edit_file {"path":"f${i}.txt","old_string":"run ${i}","new_string":"run ${i} edited"}`,
      ]);
      const usage = run.usage.inputTokens + run.usage.outputTokens;
      expect(usage).toBeGreaterThan(0);
    }
    console.info(JSON.stringify({ test: `${runs} concurrent multi-agent runs, 3 crashes each`, wallMs, peakRssMiB: Math.round(peakRss / 1024 / 1024) }));
  }, 300_000);
});
