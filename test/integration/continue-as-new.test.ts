import { describe, expect, it } from 'vitest';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

// A lowered threshold: every 3 iterations the loop continues in a fresh execution.
const local = useLocalStack({}, { stackProps: { iterationsPerExecution: 3 } });

describe('continue-as-new', () => {
  it('carries a long loop on in fresh executions instead of growing one history', async () => {
    const turns = Array.from({ length: 7 }, (_, i) => ({ turn: use([`toolu_${i}`, 'calculator', { operation: 'add', a: i, b: 1 }]) }));
    const tag = local.book.add('long', ...turns, { turn: say('counted to 7') });
    const run = await local.run(`${tag} Count.`, { maxIterations: 20 });

    expect(run).toMatchObject({ status: 'succeeded', iterations: { single: 8 }, result: { response: 'counted to 7' } });
    const loops = local.stack.runtime.list().filter((e) => e.name.startsWith(`${run.runId}-single`));
    expect(loops.map((e) => [e.name.slice(run.runId.length), e.status])).toEqual([
      ['-single', 'SUCCEEDED'],
      ['-single-3', 'SUCCEEDED'],
      ['-single-6', 'SUCCEEDED'],
    ]);
    // Each execution ran at most 3 iterations; one that hands over enters Inference once more,
    // where the step answers `continue` without calling the model.
    for (const [i, loop] of loops.entries()) {
      const handsOver = i < loops.length - 1;
      expect(loop.trail.filter((s) => s === 'Inference').length).toBeLessThanOrEqual(handsOver ? 4 : 3);
      expect(loop.trail.includes('ContinueAsNew')).toBe(handsOver);
    }
    // The conversation is one, in order, whatever execution wrote it.
    const messages = (await local.get(`/runs/${run.runId}/messages`)).body.items as { seq: number }[];
    expect(messages.map((m) => m.seq)).toEqual([...Array(16).keys()]);
  });

  it('keeps the iteration limit across executions and fails with its message', async () => {
    const turns = Array.from({ length: 5 }, (_, i) => ({ turn: use([`toolu_${i}`, 'list_files', {}]) }));
    const tag = local.book.add('limit-across', ...turns);
    const run = await local.run(`${tag} Never stop.`, { maxIterations: 5 });
    expect(run).toMatchObject({
      status: 'failed',
      error: { code: 'MaxIterationsExceeded', message: 'The agent reached the limit of 5 iterations without finishing.', agent: 'single' },
      iterations: { single: 5 },
    });
  });
});
