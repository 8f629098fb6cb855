/**
 * Context that never overflows, through the synthesized agent loop: a local Messages API with a
 * small context window refuses what does not fit, as the real API does, and Stepwise compacts.
 */
import { describe, expect, it } from 'vitest';
import type { WireRequest } from '../../local/stand-ins/messages-api.js';
import { isSummaryRequest, writer } from '../support/compaction.js';
import { useLocalStack } from '../support/local-stack.js';

const window = 3_000;
const maxTokens = 200;
const stack = useLocalStack(
  { STEPWISE_CONTEXT_WINDOW_TOKENS: String(window), STEPWISE_MAX_TOKENS: String(maxTokens), STEPWISE_MODEL: 'claude-sonnet-4-5' },
  { messagesApi: { contextWindowTokens: window } },
);

const tokens = (body: WireRequest) => Math.ceil(JSON.stringify([body.system, body.tools, body.messages]).length / 4);

describe('compaction through the agent loop', () => {
  it('runs past the context window: older turns summarized, every request fits, the full history kept', async () => {
    const goal = `${stack.book.respondWith('compact-run', writer('compact-run', 8))} Write eight notes.`;
    const run = await stack.run(goal, { maxIterations: 20 });

    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'Wrote 8 files.' }, iterations: { single: 9 } });
    const files = await stack.get(`/runs/${run.runId}/files`);
    expect((files.body.items as { path: string }[]).map((f) => f.path).sort()).toEqual(
      Array.from({ length: 8 }, (_, i) => `notes/${i}.md`),
    );

    const requests = stack.book.requests.get('compact-run') ?? [];
    const summaries = requests.filter(isSummaryRequest);
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    for (const body of requests) expect(tokens(body) + maxTokens).toBeLessThanOrEqual(window);
    // After the first summary, every request opens with the newest summary and then an assistant turn.
    const firstSummary = requests.findIndex(isSummaryRequest);
    for (const body of requests.slice(firstSummary + 1).filter((b) => !isSummaryRequest(b))) {
      expect(JSON.stringify(body.messages[0]?.content)).toContain('Writing notes; files');
      expect(body.messages[1]?.role).toBe('assistant');
    }
    // Nothing was refused for length: compaction came first.
    expect(stack.messages.requests.length).toBe(requests.length);

    // The transcript keeps every message: 1 goal + 9 answers + 8 result messages.
    const messages = await stack.get(`/runs/${run.runId}/messages`);
    expect((messages.body.items as unknown[]).length).toBe(18);
  });

  it('records usage per agent and an estimated cost that includes the summaries', async () => {
    const goal = `${stack.book.respondWith('compact-cost', writer('compact-cost', 6))} Write six notes.`;
    const run = await stack.run(goal, { maxIterations: 20 });
    expect(run.status).toBe('succeeded');
    expect(run.usageByAgent).toEqual({ single: run.usage });
    // The local API reports input tokens for messages and output tokens for content: price them.
    const answered = stack.book.requests.get('compact-cost') ?? [];
    expect(answered.filter(isSummaryRequest).length).toBeGreaterThanOrEqual(1);
    const { inputTokens, outputTokens } = run.usage;
    expect(run.estimatedCostUsd).toBeCloseTo((inputTokens * 3 + outputTokens * 15) / 1e6, 10);
  });
});
