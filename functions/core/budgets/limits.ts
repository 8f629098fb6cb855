/**
 * Budgets (docs/costs.md, "Budgets"): spend is what the run record counts (`usage`,
 * `estimatedCostUsd`), so a budget is checked against exactly what was called; the daily spend of
 * a caller is the sum of what its runs' calls cost that UTC day, each call counted toward the day it
 * was made, whenever its run started.
 */
import type { Usage } from '../model/messages.js';
import type { Run } from '../runs/types.js';
import type { Budget, BudgetSettings } from './types.js';

/** The UTC day of a time, as the spend store keys it. */
export function dayOf(time: Date | string): string {
  return (typeof time === 'string' ? time : time.toISOString()).slice(0, 10);
}

/** Every token of a call counts toward a token budget: input, output, cache reads and cache writes. */
export function tokensOf(usage: Usage): number {
  return usage.inputTokens + usage.outputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
}

/** A run's budget: the request's fields, and the deployment's default for those it leaves out. */
export function runBudget(requested: Budget | undefined, settings: BudgetSettings | undefined): Budget | undefined {
  const budget = { ...settings?.defaultRun, ...requested };
  return budget.maxUsd === undefined && budget.maxTokens === undefined ? undefined : budget;
}

/** USD as a person reads it: at most four decimals, no trailing zeros. */
export function usd(amount: number): string {
  return `$${Number(amount.toFixed(4))}`;
}

/** Why a run must stop now, if its own budget is spent (`spent ≥ limit`). */
export function runBudgetSpent(run: Pick<Run, 'budget' | 'usage' | 'estimatedCostUsd'>): string | undefined {
  const { budget } = run;
  const cost = run.estimatedCostUsd ?? 0;
  if (budget?.maxUsd !== undefined && cost >= budget.maxUsd) {
    return `The run's budget of ${usd(budget.maxUsd)} is spent: it has cost ${usd(cost)} so far.`;
  }
  const tokens = tokensOf(run.usage);
  if (budget?.maxTokens !== undefined && tokens >= budget.maxTokens) {
    return `The run's budget of ${budget.maxTokens.toLocaleString('en-US')} tokens is spent: it has used ${tokens.toLocaleString('en-US')} so far.`;
  }
  return undefined;
}

/** Why a caller may start or run nothing more today, if its daily budget is spent. */
export function dailyBudgetSpent(spent: number, dailyMaxUsd: number | undefined, day: string): string | undefined {
  if (dailyMaxUsd === undefined || spent < dailyMaxUsd) return undefined;
  return `The daily budget of ${usd(dailyMaxUsd)} per caller is spent: your runs have spent ${usd(spent)} on ${day} (UTC).`;
}

/** What the model is told of a call of the turn that crossed a budget. */
export function notRunForBudget(reason: string): string {
  return `Not run: ${reason} The run stopped before this call.`;
}
