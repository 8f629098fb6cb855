/**
 * Budgets (docs/ARCHITECTURE.md, "Budgets"): a run's own limit in USD and tokens, and a caller's
 * daily limit in USD. Spend is what the run record counts (`usage`, `estimatedCostUsd`), so a
 * budget is checked against exactly what was called; the daily spend of a caller is the sum of
 * what its runs cost, each run counted toward the UTC day it started.
 */
import * as z from 'zod';
import type { Owner } from './callers.js';
import { StepwiseError } from './errors.js';
import type { Usage } from './messages.js';
import type { Run } from './runs.js';

/** The most one budget may name, in USD: a guard against typos, not a policy. */
const maxBudgetUsd = 1_000_000;

/** A run's budget: it ends `BudgetExceeded` once it has spent this much. */
export const Budget = z
  .object({
    maxUsd: z
      .number()
      .positive()
      .max(maxBudgetUsd)
      .optional()
      .meta({ description: 'Stop once the run’s estimated model cost (`estimatedCostUsd`) reaches this many USD.' }),
    maxTokens: z
      .number()
      .int()
      .positive()
      .optional()
      .meta({ description: 'Stop once the run’s tokens (input, output, cache reads and cache writes together) reach this many.' }),
  })
  .strict()
  .meta({ id: 'Budget', description: 'Limits on what one run may spend; checked before and after each model call.' });
export type Budget = z.infer<typeof Budget>;

/** The deployment's budget settings (`stepwise:budgets` in cdk.json; environment variables locally). */
export interface BudgetSettings {
  /** The budget of a run that names none (fields it names win, one by one). */
  defaultRun?: Budget;
  /** What one caller's runs may cost in one UTC day, in USD. */
  dailyMaxUsd?: number;
}

/** Once spent, the run's, or its caller's daily, budget stops the run (and refuses new runs: 429). */
export class BudgetExceeded extends StepwiseError {
  override readonly name = 'BudgetExceeded';
  readonly status = 429;
}

/** What the runs of one caller cost, per UTC day: the daily limit's counter. */
export interface SpendStore {
  /** What the owner's runs that started on `day` (`yyyy-mm-dd`, UTC) have cost so far, in USD. */
  spentOn(owner: Owner, day: string): Promise<number>;
  /**
   * Raises what run `runId` (the owner's, started on `day`) is known to have cost to `usd`.
   * Never lowers it, so a repeat (a retried step) changes nothing: the run record's cost is
   * counted once per step, and this copies it.
   */
  recordRun(owner: Owner, day: string, runId: string, usd: number): Promise<void>;
}

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
  return `The daily budget of ${usd(dailyMaxUsd)} per caller is spent: your runs started on ${day} (UTC) have cost ${usd(spent)}.`;
}

/** What the model is told of a call of the turn that crossed a budget. */
export function notRunForBudget(reason: string): string {
  return `Not run: ${reason} The run stopped before this call.`;
}
