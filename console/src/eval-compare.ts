/**
 * Two eval reports side by side (docs/evals.md, "Deployed"): one row per case of either report,
 * each side's status, cost and model calls, and whether the case regressed, was fixed or grew, as
 * core's `compare` says. No DOM: the unit tests run it on Node.
 */
import { compare } from '../../functions/core/evals/report.js';
import type { CaseResult, EvalReport } from '../../functions/core/evals/types.js';

/** One side of a row: what the case did in that report, or nothing when the report has no such case. */
export type Side = Pick<CaseResult, 'status' | 'costUsd' | 'iterations'> | undefined;

export interface CompareRow {
  caseId: string;
  before: Side;
  after: Side;
  /** `regression`: it passed and now does not (or one of its checks now fails); `fixed`: it passes now. */
  change: 'regression' | 'fixed' | 'same';
  /** What grew beyond the thresholds: flagged, not a regression. */
  grew: ('cost' | 'iterations')[];
  /** The regressed checks, each with why it fails now. */
  details: string[];
}

const sideOf = (c: CaseResult | undefined): Side => (c ? { status: c.status, costUsd: c.costUsd, iterations: c.iterations } : undefined);

/** The rows of two reports: the earlier report's cases in its order, then the cases only the later one has. */
export function compareRows(before: EvalReport, after: EvalReport): CompareRow[] {
  const comparison = compare(before, after);
  const ids = [...new Set([...before.cases.map((c) => c.id), ...after.cases.map((c) => c.id)])];
  return ids.map((caseId) => {
    const regressions = comparison.regressions.filter((r) => r.caseId === caseId);
    return {
      caseId,
      before: sideOf(before.cases.find((c) => c.id === caseId)),
      after: sideOf(after.cases.find((c) => c.id === caseId)),
      change: regressions.length ? 'regression' : comparison.fixed.includes(caseId) ? 'fixed' : 'same',
      grew: comparison.increases.filter((i) => i.caseId === caseId).map((i) => (i.metric === 'costUsd' ? 'cost' : 'iterations')),
      details: regressions.filter((r) => r.kind === 'check').map((r) => `${r.check ?? ''}: ${r.after}`),
    };
  });
}
