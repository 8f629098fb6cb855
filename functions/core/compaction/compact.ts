/**
 * Compaction at a step: summarize the turns before a cut and store the summary (once per cut).
 */
import { type ContextPolicy } from './types.js';
import { chooseCut, summaryRequestMessages } from './context.js';
import { type Compaction, type Conversation } from '../conversation/types.js';
import { textOf } from '../model/messages.js';
import { type ModelRequest, ModelResponseEmpty } from '../model/types.js';
import type { InferenceInput } from '../steps/types.js';
import type { InferenceDeps } from '../steps/types.js';

/**
 * Summarizes the turns before a cut and stores the summary (once per cut), so this and every
 * later request of the conversation starts with it. `undefined` when there is nothing to cut.
 */
export async function compact(
  conversation: Conversation,
  conversationId: string,
  request: Pick<ModelRequest, 'system' | 'tools'>,
  model: string,
  input: InferenceInput,
  deps: InferenceDeps,
  policy: ContextPolicy,
): Promise<Conversation | undefined> {
  const cut = chooseCut(conversation, policy);
  const last = conversation.messages.at(-1);
  if (cut === undefined || !last) return undefined;
  // The same system prompt and tools as the step's own request, so the summary call hits the cache.
  // No live text: the summary is no message of the conversation, and no watcher is shown it.
  const response = await deps.model.generate({
    model,
    maxTokens: deps.settings.maxTokens,
    ...request,
    messages: summaryRequestMessages(conversation, cut),
  });
  const summary = textOf(response.message).trim();
  if (!summary) throw new ModelResponseEmpty('The model returned no summary when asked to compact the conversation.');
  const compaction = await deps.conversations.putCompaction(conversationId, {
    fromSeq: cut,
    atSeq: last.seq,
    summary,
    runId: input.runId,
    iteration: input.iteration,
    usage: response.usage,
    model: response.model,
  });
  return { ...conversation, compaction };
}

/** The compaction, if this very step made it (a retried step finds it stored). */
export function madeBy(compaction: Compaction | undefined, input: InferenceInput): Compaction | undefined {
  return compaction?.runId === input.runId && compaction.iteration === input.iteration ? compaction : undefined;
}
