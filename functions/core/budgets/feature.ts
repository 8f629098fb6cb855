/**
 * Budgets at the inference step (docs/costs.md, "Budgets"): checked before the step's first
 * model call and after each call is counted, so a run stops at the exact call that spends it.
 */
import { toolResult, toolUses } from '../model/messages.js';
import type { RunControls, RunTotals } from '../runs/types.js';
import type { InferenceFeature, InferenceStep } from '../steps/hooks.js';
import type { StoredMessage } from '../conversation/types.js';
import { dailyBudgetSpent, dayOf, notRunForBudget, runBudgetSpent } from './limits.js';
import { BudgetExceeded } from './types.js';

/** Stops a run whose budget, or whose owner's daily budget, is spent. */
export const budgetsFeature: InferenceFeature = {
  name: 'budgets',
  beforeModel: (call) => stopIfSpent(call, 'before'),
  afterCount: (counted) => stopIfSpent(counted, counted.totals ?? 'read', counted.turn),
};

/**
 * Ends the run with `BudgetExceeded` once its budget, or its owner's daily budget, is spent:
 * checked before each model call (`spent` is `before`: the run as the step read it) and after
 * each call was counted (the run's totals as the count answered them, or `read`: read again,
 * when the count found the call counted already), its cost copied into its owner's counter of the
 * day it was counted toward first. The calls of `turn`, the turn that crossed the budget, are answered as not run, so none
 * of them runs and the conversation stays whole.
 */
async function stopIfSpent(step: InferenceStep, spent: 'before' | 'read' | RunTotals, turn?: StoredMessage): Promise<void> {
  const { run, deps, conversationId } = step;
  const daily = deps.budgets?.dailyMaxUsd !== undefined && deps.spend !== undefined && run?.owner !== undefined;
  if (!run || (!run.budget && !daily)) return;
  const counted = spent !== 'before';
  // A cached run (one without a budget) holds no current spend: after a counted call, its totals.
  const current: RunControls =
    spent === 'before' ? run : spent === 'read' ? ((await deps.runs.get(run.runId)) ?? run) : { ...run, ...spent };
  let reason = runBudgetSpent(current);
  if (daily && deps.spend && current.owner) {
    // The run's own calls, by the day each was counted toward (a child run counts its own): the
    // day just counted, or every day of the run when the count was made before (a retried step).
    if (counted) {
      for (const [day, cost] of Object.entries(current.spentByDay ?? {})) {
        if (cost > 0) await deps.spend.recordRun(current.owner, day, current.runId, cost);
      }
    }
    const today = dayOf((deps.clock ?? (() => new Date()))());
    reason ??= dailyBudgetSpent(await deps.spend.spentOn(current.owner, today), deps.budgets?.dailyMaxUsd, today);
  }
  if (!reason) return;
  if (turn) {
    const note = notRunForBudget(reason);
    for (const [index, call] of toolUses(turn).entries()) {
      await deps.conversations.putResult(conversationId, turn.seq, index, toolResult(call.id, note, true), { ran: false });
    }
  }
  throw new BudgetExceeded(reason);
}
