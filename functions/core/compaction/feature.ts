/**
 * Compaction at the inference step (invariant 11, docs/ARCHITECTURE.md): at most once a step, before
 * the call when the conversation nears the window, or when the model says it no longer fits; a
 * second "too long" is the run's error. Each summary is counted before the answer is asked for, so
 * a budget can stop the run between them.
 */
import { textOf } from '../model/messages.js';
import { ContextWindowExceeded, ModelResponseEmpty } from '../model/types.js';
import type { Compaction, Conversation } from '../conversation/types.js';
import type { InferenceFeature, ModelCall } from '../steps/hooks.js';
import type { InferenceInput } from '../steps/types.js';
import { chooseCut, needsCompaction, refusedPolicy, summaryRequestMessages } from './context.js';
import { type ContextPolicy, defaultContextPolicy } from './types.js';

/** The calls whose step has compacted (or found its own summary stored): it compacts no more. */
const compacted = new WeakSet<ModelCall>();

/** Keeps the conversation inside the model's context window. */
export const compactionFeature: InferenceFeature = {
  name: 'compaction',
  async beforeModel(call) {
    const earlier = madeBy(call.conversation.compaction, call.input);
    if (earlier) {
      // A retried step finds the summary it made stored: counted again (once), not made again.
      compacted.add(call);
      await call.count(earlier);
      return;
    }
    if (needsCompaction(call.conversation, policyOf(call), call.maxTokens)) await compactBy(call, policyOf(call));
  },
  async aroundModel(call, next) {
    try {
      const response = await next();
      if (response.stopReason === 'model_context_window_exceeded' && !compacted.has(call)) {
        throw new ContextWindowExceeded('The answer was cut off because the conversation filled the context window.');
      }
      return response;
    } catch (error) {
      if (!(error instanceof ContextWindowExceeded) || compacted.has(call)) throw error;
      if (!(await compactBy(call, refusedPolicy(call.conversation, policyOf(call), error.limitTokens)))) throw error;
      return next();
    }
  },
};

function policyOf(call: ModelCall): ContextPolicy {
  return call.deps.context ?? defaultContextPolicy;
}

/** Compacts the call's conversation by `policy` and counts the summary; `false` when there was nothing to cut. */
async function compactBy(call: ModelCall, policy: ContextPolicy): Promise<boolean> {
  const shorter = await compact(call, policy);
  if (!shorter) return false;
  compacted.add(call);
  call.conversation = shorter;
  if (shorter.compaction) await call.count(shorter.compaction);
  return true;
}

/**
 * Summarizes the turns before a cut and stores the summary (once per cut), so this and every
 * later request of the conversation starts with it. `undefined` when there is nothing to cut.
 */
async function compact(call: ModelCall, policy: ContextPolicy): Promise<Conversation | undefined> {
  const { conversation, deps, input } = call;
  const cut = chooseCut(conversation, policy);
  const last = conversation.messages.at(-1);
  if (cut === undefined || !last) return undefined;
  // The same system prompt and tools as the step's own request, so the summary call hits the cache.
  // No live text: the summary is no message of the conversation, and no watcher is shown it.
  const response = await deps.model.generate({
    model: call.model,
    maxTokens: deps.settings.maxTokens,
    system: call.request.system,
    tools: call.request.tools,
    messages: summaryRequestMessages(conversation, cut),
    // Cleared as the step's own requests are, so the summary call reads the prefix they cached.
    ...(deps.contextEditing ? { contextEditing: deps.contextEditing } : {}),
  });
  const summary = textOf(response.message).trim();
  if (!summary) throw new ModelResponseEmpty('The model returned no summary when asked to compact the conversation.');
  const compaction = await deps.conversations.putCompaction(call.conversationId, {
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
function madeBy(compaction: Compaction | undefined, input: InferenceInput): Compaction | undefined {
  return compaction?.runId === input.runId && compaction.iteration === input.iteration ? compaction : undefined;
}
