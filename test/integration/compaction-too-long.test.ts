/**
 * Compaction when the model, not Stepwise, finds the conversation too long: Stepwise believes the
 * window is 200K tokens; the local Messages API's is much smaller and says so with a 400.
 */
import { describe, expect, it } from 'vitest';
import type { WireRequest } from '../../local/stand-ins/messages-api.js';
import { isSummaryRequest, writer } from '../support/compaction.js';
import { useLocalStack } from '../support/local-stack.js';

const maxTokens = 200;
const tight = useLocalStack({ STEPWISE_MAX_TOKENS: String(maxTokens) }, { messagesApi: { contextWindowTokens: 2_400 } });

describe('compaction when the model says the prompt is too long', () => {
  it('compacts and calls again, and the run succeeds', async () => {
    const goal = `${tight.book.respondWith('too-long', writer('too-long', 6))} Write six notes.`;
    const run = await tight.run(goal, { maxIterations: 20 });
    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'Wrote 6 files.' } });
    const refused = tight.messages.requests.length - (tight.book.requests.get('too-long')?.length ?? 0);
    expect(refused).toBeGreaterThanOrEqual(1);
    expect((tight.book.requests.get('too-long') ?? []).filter(isSummaryRequest).length).toBe(refused);
  });

  it('fails ContextWindowExceeded, naming the problem, when even the newest turn does not fit', async () => {
    const huge = (body: WireRequest) =>
      isSummaryRequest(body)
        ? { turn: { content: [{ type: 'text', text: '[[too-huge]] summary' }] } }
        : { turn: { content: [{ type: 'tool_use', id: `toolu_${body.messages.length}`, name: 'write_file', input: { path: 'big.md', content: 'z'.repeat(12_000) } }] } };
    const goal = `${tight.book.respondWith('too-huge', huge)} Write a big file.`;
    const run = await tight.run(goal, { maxIterations: 5 });
    expect(run).toMatchObject({ status: 'failed', error: { code: 'ContextWindowExceeded' } });
    expect(run.error?.message).toMatch(/too long/);
  });
});
