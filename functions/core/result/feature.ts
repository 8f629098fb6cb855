/**
 * The run's result at the inference step: when an answer finishes the run, its final text and the
 * tool calls that ran, recorded on the run with the step's usage.
 */
import type { InferenceFeature } from '../steps/hooks.js';
import { runResult } from './result.js';

/** Sums up the run when its answering agent finishes. */
export const resultFeature: InferenceFeature = {
  name: 'result',
  afterModel(answer) {
    if (!answer.finished) return;
    answer.result = { ...runResult(answer.conversation, answer.input.runId, answer.message), ...(answer.output ? { output: answer.output } : {}) };
  },
};
