/**
 * A suite's report: its cases' results summed up, two reports compared (what got worse, what got
 * fixed, what grew), and both drawn as a table for a terminal or as Markdown.
 */
import type { CaseResult, Comparison, EvalReport, Increase, IncreaseThresholds, Regression, ReportSummary } from './types.js';

/** The totals of a suite's results. */
export function summarize(cases: readonly CaseResult[], durationMs: number): ReportSummary {
  return {
    total: cases.length,
    passed: cases.filter((c) => c.status === 'pass').length,
    failed: cases.filter((c) => c.status === 'fail').length,
    errored: cases.filter((c) => c.status === 'error').length,
    costUsd: cases.reduce((sum, c) => sum + c.costUsd, 0),
    tokens: { input: cases.reduce((sum, c) => sum + c.tokens.input, 0), output: cases.reduce((sum, c) => sum + c.tokens.output, 0) },
    durationMs,
  };
}

/** The report of a suite's run: its cases in the suite's order. */
export function buildReport(input: { suite: string; target: string; startedAt: Date; finishedAt: Date; cases: readonly CaseResult[] }): EvalReport {
  return {
    suite: input.suite,
    target: input.target,
    startedAt: input.startedAt.toISOString(),
    finishedAt: input.finishedAt.toISOString(),
    cases: [...input.cases],
    summary: summarize(input.cases, input.finishedAt.getTime() - input.startedAt.getTime()),
  };
}

/** Whether a report is all passes: the eval's exit code is 0 then, else 1. */
export function allPassed(report: EvalReport): boolean {
  return report.cases.every((c) => c.status === 'pass');
}

/** Grown by 25% and by more than $0.001 (cost), or by 25% and by more than 1 (model calls). */
export const defaultThresholds: IncreaseThresholds = { costRatio: 0.25, costFloorUsd: 0.001, iterationsRatio: 0.25, iterationsFloor: 1 };

function grew(before: number, after: number, ratio: number, floor: number): boolean {
  return after - before > floor && after > before * (1 + ratio);
}

/** A check's key in a case: its place and label, so a suite whose checks moved is compared check by check only where they agree. */
const keyOf = (index: number, label: string) => `${index}:${label}`;

/**
 * What changed from `before` to `after`, case by case (matched by id): a case that passed and now
 * fails, errors or is gone is a regression, and so is each check that passed and now fails (in a
 * case that still ran); a case that did not pass and now does is fixed; cost and model calls that
 * grew beyond the thresholds are increases, flagged apart.
 */
export function compare(before: EvalReport, after: EvalReport, thresholds: IncreaseThresholds = defaultThresholds): Comparison {
  const regressions: Regression[] = [];
  const fixed: string[] = [];
  const increases: Increase[] = [];
  const now = new Map(after.cases.map((c) => [c.id, c]));
  for (const was of before.cases) {
    const is = now.get(was.id);
    if (!is) {
      if (was.status === 'pass') regressions.push({ caseId: was.id, kind: 'case', before: 'pass', after: 'missing' });
      continue;
    }
    if (was.status === 'pass' && is.status !== 'pass') regressions.push({ caseId: was.id, kind: 'case', before: 'pass', after: is.status });
    if (was.status !== 'pass' && is.status === 'pass') fixed.push(was.id);
    if (is.status !== 'error') {
      const checks = new Map(is.checks.map((c, i) => [keyOf(i, c.label), c]));
      was.checks.forEach((check, i) => {
        const then = checks.get(keyOf(i, check.label));
        if (check.pass && then && !then.pass) regressions.push({ caseId: was.id, kind: 'check', check: check.label, before: 'pass', after: then.reason });
      });
    }
    // Spend is compared only between runs that both ended: an error spends nothing to compare.
    if (was.status === 'error' || is.status === 'error') continue;
    if (grew(was.costUsd, is.costUsd, thresholds.costRatio, thresholds.costFloorUsd)) increases.push({ caseId: was.id, metric: 'costUsd', before: was.costUsd, after: is.costUsd });
    if (grew(was.iterations, is.iterations, thresholds.iterationsRatio, thresholds.iterationsFloor)) {
      increases.push({ caseId: was.id, metric: 'iterations', before: was.iterations, after: is.iterations });
    }
  }
  return { regressions, fixed, increases };
}

export type TableFormat = 'terminal' | 'markdown';

const usd = (value: number) => `$${value.toFixed(4)}`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
const tokens = (t: { input: number; output: number }) => `${t.input}/${t.output}`;

/** Rows under a header: Markdown's pipes, or columns as wide as their widest cell, two spaces apart. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], format: TableFormat): string[] {
  if (format === 'markdown') {
    const cell = (value: string) => value.replace(/\|/g, '\\|').replace(/\n/g, ' ');
    const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
    return [line(header), `|${header.map(() => '---').join('|')}|`, ...rows.map(line)];
  }
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i < cells.length - 1 ? c.padEnd(widths[i] ?? 0) : c)).join('  ').trimEnd();
  return [line(header), ...rows.map(line)];
}

/**
 * The report as a table (per case: status, a mark per check, cost, tokens in/out, model calls,
 * time), the totals, then each failed check and each error with its reason.
 */
export function renderReport(report: EvalReport, format: TableFormat = 'terminal'): string {
  const rows = report.cases.map((c) => [
    c.id,
    c.status.toUpperCase(),
    c.checks.map((check) => (check.pass ? '✓' : '✗')).join('') || '-',
    usd(c.costUsd),
    tokens(c.tokens),
    String(c.iterations),
    seconds(c.durationMs),
  ]);
  const s = report.summary;
  const lines = [
    format === 'markdown' ? `## ${report.suite} (${report.target})` : `${report.suite} · ${report.target}`,
    '',
    ...table(['CASE', 'STATUS', 'CHECKS', 'COST', 'TOKENS', 'ITER', 'TIME'], rows, format),
    '',
    `${s.passed} passed, ${s.failed} failed, ${s.errored} errors of ${s.total} · ${usd(s.costUsd)} · ${tokens(s.tokens)} tokens · ${seconds(s.durationMs)}`,
  ];
  const bullet = format === 'markdown' ? '- ' : '  ';
  const problems = report.cases.flatMap((c) => [
    ...(c.error ? [`${bullet}${c.id}: ${c.status === 'error' ? 'error' : 'run'}: ${c.error}`] : []),
    ...c.checks.filter((check) => !check.pass).map((check) => `${bullet}${c.id}: ✗ ${check.label}: ${check.reason}`),
  ]);
  if (problems.length) lines.push('', format === 'markdown' ? '### Failures' : 'failures:', ...problems);
  return lines.join('\n');
}

/** A comparison as lines: each regression, then what was fixed and what grew; "no regressions" when none. */
export function renderComparison(comparison: Comparison): string {
  const lines = comparison.regressions.length
    ? [
        `${comparison.regressions.length} regression${comparison.regressions.length === 1 ? '' : 's'}:`,
        ...comparison.regressions.map((r) => (r.kind === 'case' ? `  ${r.caseId}: was pass, now ${r.after}` : `  ${r.caseId}: ${r.check ?? ''} passed, now fails: ${r.after}`)),
      ]
    : ['no regressions'];
  if (comparison.fixed.length) lines.push(`fixed: ${comparison.fixed.join(', ')}`);
  for (const i of comparison.increases) {
    const show = i.metric === 'costUsd' ? usd : String;
    lines.push(`  ${i.caseId}: ${i.metric === 'costUsd' ? 'cost' : 'model calls'} grew from ${show(i.before)} to ${show(i.after)}`);
  }
  return lines.join('\n');
}
