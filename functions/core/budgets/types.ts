/**
 * Budgets (docs/costs.md, "Budgets"): a run's own limit in USD and tokens, and a caller's
 * daily limit in USD, with the port that counts a caller's daily spend.
 */
import * as z from 'zod';
import type { Owner } from '../callers/types.js';
import { named } from '../errors/errors.js';

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
export class BudgetExceeded extends named('BudgetExceeded') {}

/** What the runs of one caller spent, per UTC day: the daily limit's counter. */
export interface SpendStore {
  /** What the owner's runs spent on `day` (`yyyy-mm-dd`, UTC) so far, in USD, whenever they started. */
  spentOn(owner: Owner, day: string): Promise<number>;
  /**
   * Raises what run `runId` (the owner's) is known to have spent on `day` to `usd`. Never lowers
   * it, so a repeat (a retried step) changes nothing: the run record counts each call once toward
   * its day (`spentByDay`), and this copies it.
   */
  recordRun(owner: Owner, day: string, runId: string, usd: number): Promise<void>;
}
