/**
 * Budgets at the inference step: checked before each model call and after each call is counted.
 */
import { BudgetExceeded } from './types.js';
import { dailyBudgetSpent, dayOf, notRunForBudget, runBudgetSpent } from './limits.js';
import { type Compaction, type StoredMessage } from '../conversation/types.js';
import { conversationIdOf } from '../conversation/conversation.js';
import { toolResult, toolUses } from '../model/messages.js';
import { estimateCost } from '../model/prices.js';
import type { RunTotals } from '../runs/types.js';
import type { InferenceInput } from '../steps/types.js';
import type { InferenceDeps } from '../steps/types.js';
import type { RunControls } from '../runs/controls.js';

/** Counts a summary call of this step (once, however often this runs), then stops the run if that spent its budget. */
export async function countSummary(summary: Compaction, input: InferenceInput, deps: InferenceDeps, run: RunControls | undefined): Promise<void> {
  const costUsd = estimateCost(summary.model, summary.usage);
  const totals = await deps.runs.recordStep(input.runId, input.agent, input.iteration, {
    usage: summary.usage,
    ...(costUsd !== undefined ? { costUsd } : {}),
    call: 'summary',
  });
  await stopIfSpent(run, input, deps, totals ?? 'read');
}

/**
 * Ends the run with `BudgetExceeded` once its budget, or its owner's daily budget, is spent:
 * checked before each model call (`spent` is `before`: the run as the step read it) and after
 * each call was counted (the run's totals as the count answered them, or `read`: read again,
 * when the count found the call counted already), its cost copied into its owner's daily counter
 * first. The calls of `turn`, the turn that crossed the budget, are answered as not run, so none
 * of them runs and the conversation stays whole.
 */
export async function stopIfSpent(
  run: RunControls | undefined,
  input: InferenceInput,
  deps: InferenceDeps,
  spent: 'before' | 'read' | RunTotals,
  turn?: StoredMessage,
): Promise<void> {
  const daily = deps.budgets?.dailyMaxUsd !== undefined && deps.spend !== undefined && run?.owner !== undefined;
  if (!run || (!run.budget && !daily)) return;
  const counted = spent !== 'before';
  // A cached run (one without a budget) holds no current spend: after a counted call, its totals.
  const current: RunControls =
    spent === 'before' ? run : spent === 'read' ? ((await deps.runs.get(run.runId)) ?? run) : { ...run, ...spent };
  let reason = runBudgetSpent(current);
  if (daily && deps.spend && current.owner) {
    const cost = current.estimatedCostUsd ?? 0;
    if (counted && cost > 0) await deps.spend.recordRun(current.owner, dayOf(current.createdAt), current.runId, cost);
    const today = dayOf((deps.clock ?? (() => new Date()))());
    reason ??= dailyBudgetSpent(await deps.spend.spentOn(current.owner, today), deps.budgets?.dailyMaxUsd, today);
  }
  if (!reason) return;
  if (turn) {
    const conversationId = input.conversationId ?? conversationIdOf(input.runId, input.agent);
    const note = notRunForBudget(reason);
    for (const [index, call] of toolUses(turn).entries()) {
      await deps.conversations.putResult(conversationId, turn.seq, index, toolResult(call.id, note, true), { ran: false });
    }
  }
  throw new BudgetExceeded(reason);
}
