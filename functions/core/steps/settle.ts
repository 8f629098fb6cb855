/**
 * The after-model stage of the inference step: what the stored answer means to the run
 * (`afterModel`), its usage and cost counted once however often the step runs (`afterCount`), the
 * calls the step answers itself, then `settle`; reduced to the small result the state machine
 * routes on (invariant 1, docs/ARCHITECTURE.md).
 */
import type { Compaction, Conversation, StoredMessage } from '../conversation/types.js';
import { toolUses } from '../model/messages.js';
import { estimateCost } from '../model/prices.js';
import { dayOf } from '../budgets/limits.js';
import { handsOver, type RunResult } from '../runs/types.js';
import type { Answer, InferenceFeature, InferenceStep } from './hooks.js';
import type { InferenceResult } from './types.js';

/**
 * After the model: what the stored answer means (`afterModel`), its usage and cost (and the run's
 * result when it finishes the run) counted once however often this runs (`afterCount`), the calls
 * the step answers itself, then `settle`; reduced to a step result.
 */
export async function settle(step: InferenceStep, features: readonly InferenceFeature[], message: StoredMessage, conversation: Conversation): Promise<InferenceResult> {
  const { input } = step;
  const reason = message.meta.stopReason ?? 'end_turn';
  const answer: Answer = {
    ...step,
    message,
    conversation,
    reason,
    stopReason: reason,
    finished: (reason === 'end_turn' || reason === 'stop_sequence') && step.profile.answersRun,
    calls: reason === 'tool_use' ? toolUses(message) : [],
    answered: [],
    children: new Map(),
    gated: new Set(),
  };
  for (const feature of features) await feature.afterModel?.(answer);
  await count(step, features, 'answer', message, answer.result);
  for (const { index, result, ran } of answer.answered) {
    await step.deps.conversations.putResult(step.conversationId, message.seq, index, result, ran ? {} : { ran: false });
  }
  for (const feature of features) await feature.settle?.(answer);
  const toolCalls = answer.calls.map(({ id, name }) => {
    const child = answer.children.get(id);
    return { id, name, needsApproval: answer.gated.has(name), ...(child ? { child } : {}) };
  });
  return {
    stopReason: answer.stopReason,
    toolCalls,
    gated: toolCalls.some((call) => call.needsApproval),
    ...(toolCalls.some((call) => call.child) ? { callsAgents: true as const } : {}),
    iteration: input.iteration,
    next: input.iteration + 1,
    seq: message.seq,
  };
}

/** Counts a model call of the step on the run record (once, however often this runs), then runs the `afterCount` hooks. */
export async function count(
  step: InferenceStep,
  features: readonly InferenceFeature[],
  call: 'answer' | 'summary',
  made: StoredMessage | Compaction,
  result?: RunResult,
): Promise<void> {
  const { usage, model } = 'meta' in made ? made.meta : made;
  const costUsd = usage ? estimateCost(model ?? '', usage) : undefined;
  const totals = usage
    ? await step.deps.runs.recordStep(step.input.runId, step.input.agent, step.input.iteration, {
        usage,
        // Stryker disable next-line ConditionalExpression: a cost of 0 for an unpriced call adds nothing to the run's cost
        ...(costUsd !== undefined ? { costUsd } : {}),
        // Spend counts toward the day it is counted, not the day the run started (docs/costs.md, "Budgets").
        day: dayOf((step.deps.clock ?? (() => new Date()))()),
        ...(result ? { result, ...(handsOver(step.run, step.input.agent) ? { handsOver: true } : {}) } : {}),
        ...(call === 'summary' ? { call } : {}),
        ...(step.profile.agentTools.size ? { withChildren: true } : {}),
      })
    : undefined;
  const turn = 'meta' in made && made.meta.stopReason === 'tool_use' ? made : undefined;
  for (const feature of features) await feature.afterCount?.({ ...step, call, totals, ...(turn ? { turn } : {}) });
}
