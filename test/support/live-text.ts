/** Helpers of the live text tests: what chunks spell, and waiting for a run's first live item. */
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import type { LiveAttempt, LiveChunk } from '../../functions/core/live/types.js';
import { wire } from '../../functions/wiring/wire.js';
import type { StackFixture } from './local-stack.js';

/** Each block's text as the chunks spell it. */
export function spelled(chunks: LiveChunk[]): Map<number, string> {
  const out = new Map<number, string>();
  for (const chunk of chunks) out.set(chunk.block, (out.get(chunk.block) ?? '') + chunk.delta);
  return out;
}

/**
 * Polls a run's live attempts until one has chunks, and says how many answers its conversation
 * held at that moment: none means the item was seen while the model still generated.
 */
export async function firstLive(local: StackFixture, runId: string): Promise<{ attempts: LiveAttempt[]; storedAnswers: number }> {
  const { liveText, conversations } = wire(process.env);
  for (;;) {
    const attempts = await liveText.list(runId);
    if (attempts.some((a) => a.chunks.length > 0)) {
      const conversation = await conversations.load(conversationIdOf(runId, 'single'));
      return { attempts, storedAnswers: conversation.messages.filter((m) => m.role === 'assistant').length };
    }
    const { body } = await local.get(`/runs/${runId}`);
    if (body.status !== 'running') throw new Error(`Run ${runId} ended (${String(body.status)}) without a live item.`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
