/**
 * Live text at the inference step (docs/events.md, "Live text"): each model call of the answer
 * streams what it has generated into its own live attempt, and stops writing before the answer is
 * stored, so no live write lands after the message.
 */
import type { InferenceFeature } from '../steps/hooks.js';
import { LiveTextWriter, newAttemptId } from './writer.js';

/** Writes the answer as the model generates it, when the deployment keeps live text. */
export const liveFeature: InferenceFeature = {
  name: 'live',
  async aroundModel(call, next) {
    const { deps, input } = call;
    if (!deps.liveText) return next();
    // Each model call is an attempt of its own: a call abandoned for another (a compacted retry,
    // a retried step) leaves its live text apart from the next one's.
    const live = new LiveTextWriter({ runId: input.runId, agent: input.agent, seq: call.seq, attempt: newAttemptId() }, deps.liveText, deps.livePolicy);
    try {
      return await next({ onProgress: live.progress });
    } finally {
      await live.settle();
    }
  },
};
