/**
 * Evals' reports (docs/evals.md): totals, the comparison of two reports (regressions of cases and
 * of checks, fixes, and cost or model calls that grew, flagged apart), and the tables.
 */
import { describe, expect, it } from 'vitest';
import { allPassed, buildReport, compare, renderComparison, renderReport } from '../../functions/core/evals/report.js';
import type { CaseResult, EvalReport } from '../../functions/core/evals/types.js';

const result = (id: string, over: Partial<CaseResult> = {}): CaseResult => ({
  id,
  goal: `goal ${id}`,
  status: 'pass',
  runId: `run-${id}`,
  checks: [{ label: 'contains "42"', type: 'contains', pass: true, reason: 'the answer contains "42"' }],
  costUsd: 0.01,
  tokens: { input: 100, output: 10 },
  iterations: 2,
  durationMs: 2000,
  ...over,
});

const report = (cases: CaseResult[]): EvalReport =>
  buildReport({ suite: 'math', target: 'agent assistant@v1', startedAt: new Date(0), finishedAt: new Date(4000), cases });

const failedCheck = { label: 'contains "42"', type: 'contains', pass: false, reason: 'the answer is "41"' };

describe('buildReport', () => {
  it('sums the cases up', () => {
    const r = report([result('a'), result('b', { status: 'fail', checks: [failedCheck] }), result('c', { status: 'error', checks: [], costUsd: 0, tokens: { input: 0, output: 0 } })]);
    expect(r.summary).toEqual({ total: 3, passed: 1, failed: 1, errored: 1, costUsd: 0.02, tokens: { input: 200, output: 20 }, durationMs: 4000 });
    expect(r.startedAt).toBe('1970-01-01T00:00:00.000Z');
    expect(allPassed(r)).toBe(false);
    expect(allPassed(report([result('a')]))).toBe(true);
  });
});

describe('compare', () => {
  it('names a case that passed and now fails, errors or is gone, and a check that passed and now fails', () => {
    const before = report([result('a'), result('b'), result('c'), result('d'), result('e', { status: 'fail', checks: [failedCheck] })]);
    const after = report([
      result('a'),
      result('b', { status: 'fail', checks: [failedCheck] }),
      result('c', { status: 'error', checks: [], error: 'timed out' }),
      result('e'),
    ]);
    expect(compare(before, after)).toEqual({
      regressions: [
        { caseId: 'b', kind: 'case', before: 'pass', after: 'fail' },
        { caseId: 'b', kind: 'check', check: 'contains "42"', before: 'pass', after: 'the answer is "41"' },
        { caseId: 'c', kind: 'case', before: 'pass', after: 'error' },
        { caseId: 'd', kind: 'case', before: 'pass', after: 'missing' },
      ],
      fixed: ['e'],
      increases: [],
    });
  });

  it('names a check that regressed in a case that failed before too', () => {
    const two = (pass: boolean) => [{ label: 'judge "r"', type: 'judge', pass, reason: pass ? 'ok' : 'no' }, failedCheck];
    expect(compare(report([result('a', { status: 'fail', checks: two(true) })]), report([result('a', { status: 'fail', checks: two(false) })])).regressions).toEqual([
      { caseId: 'a', kind: 'check', check: 'judge "r"', before: 'pass', after: 'no' },
    ]);
  });

  it('flags cost and model calls that grew beyond the thresholds, apart from regressions', () => {
    const before = report([result('a'), result('b'), result('c')]);
    const after = report([result('a', { costUsd: 0.02, iterations: 4 }), result('b', { costUsd: 0.0105, iterations: 3 }), result('c', { status: 'error', checks: [], costUsd: 1 })]);
    expect(compare(before, after)).toEqual({
      regressions: [{ caseId: 'c', kind: 'case', before: 'pass', after: 'error' }],
      fixed: [],
      increases: [
        { caseId: 'a', metric: 'costUsd', before: 0.01, after: 0.02 },
        { caseId: 'a', metric: 'iterations', before: 2, after: 4 },
      ],
    });
    expect(compare(before, after, { costRatio: 0, costFloorUsd: 0, iterationsRatio: 0, iterationsFloor: 0 }).increases.map((i) => `${i.caseId}:${i.metric}`)).toEqual([
      'a:costUsd',
      'a:iterations',
      'b:costUsd',
      'b:iterations',
    ]);
  });

  it('renders what it found', () => {
    const before = report([result('a'), result('b')]);
    const after = report([result('a', { status: 'fail', checks: [failedCheck], costUsd: 0.05 }), result('b')]);
    expect(renderComparison(compare(before, after))).toBe(
      ['2 regressions:', '  a: was pass, now fail', '  a: contains "42" passed, now fails: the answer is "41"', '  a: cost grew from $0.0100 to $0.0500'].join('\n'),
    );
    expect(renderComparison(compare(before, before))).toBe('no regressions');
  });
});

describe('renderReport', () => {
  const r = report([result('a'), result('b', { status: 'fail', checks: [result('b').checks[0]!, failedCheck] }), result('c', { status: 'error', checks: [], error: 'HTTP 400: unknown agent', costUsd: 0 })]);

  it('draws a terminal table, the totals, then every failure with its reason', () => {
    expect(renderReport(r, 'terminal')).toBe(
      [
        'math · agent assistant@v1',
        '',
        'CASE  STATUS  CHECKS  COST     TOKENS  ITER  TIME',
        'a     PASS    ✓       $0.0100  100/10  2     2.0s',
        'b     FAIL    ✓✗      $0.0100  100/10  2     2.0s',
        'c     ERROR   -       $0.0000  100/10  2     2.0s',
        '',
        '1 passed, 1 failed, 1 errors of 3 · $0.0200 · 300/30 tokens · 4.0s',
        '',
        'failures:',
        '  b: ✗ contains "42": the answer is "41"',
        '  c: error: HTTP 400: unknown agent',
      ].join('\n'),
    );
  });

  it('draws Markdown with escaped cells', () => {
    const md = renderReport(report([result('a|b')]), 'markdown').split('\n');
    expect(md.slice(0, 5)).toEqual(['## math (agent assistant@v1)', '', '| CASE | STATUS | CHECKS | COST | TOKENS | ITER | TIME |', '|---|---|---|---|---|---|---|', '| a\\|b | PASS | ✓ | $0.0100 | 100/10 | 2 | 2.0s |']);
  });
});
