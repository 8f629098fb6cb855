import { describe, expect, it } from 'vitest';
import { compareRows } from '../../console/src/eval-compare.js';
import type { CaseResult, EvalReport } from '../../functions/core/evals/types.js';

const kase = (id: string, status: CaseResult['status'], pass: boolean[], costUsd = 0.01, iterations = 2): CaseResult => ({
  id,
  goal: id,
  status,
  checks: pass.map((p, i) => ({ label: `contains "${i}"`, type: 'contains', pass: p, reason: p ? 'ok' : 'the answer is "x"' })),
  costUsd,
  tokens: { input: 1, output: 1 },
  iterations,
  durationMs: 1,
});
const report = (cases: CaseResult[]): EvalReport => ({
  suite: 's',
  target: 'agent assistant',
  startedAt: '2026-01-01T00:00:00.000Z',
  finishedAt: '2026-01-01T00:00:01.000Z',
  cases,
  summary: { total: cases.length, passed: 0, failed: 0, errored: 0, costUsd: 0, tokens: { input: 0, output: 0 }, durationMs: 0 },
});

describe('two eval reports side by side', () => {
  it('gives a row per case of either report, marking regressions, fixes and growth as compare does', () => {
    const before = report([kase('a', 'pass', [true, true]), kase('b', 'fail', [false]), kase('c', 'pass', [true]), kase('gone', 'pass', [true])]);
    const after = report([kase('a', 'fail', [true, false]), kase('b', 'pass', [true]), kase('c', 'pass', [true], 0.05, 6), kase('new', 'error', [])]);
    expect(compareRows(before, after)).toEqual([
      { caseId: 'a', before: { status: 'pass', costUsd: 0.01, iterations: 2 }, after: { status: 'fail', costUsd: 0.01, iterations: 2 }, change: 'regression', grew: [], details: ['contains "1": the answer is "x"'] },
      { caseId: 'b', before: { status: 'fail', costUsd: 0.01, iterations: 2 }, after: { status: 'pass', costUsd: 0.01, iterations: 2 }, change: 'fixed', grew: [], details: [] },
      { caseId: 'c', before: { status: 'pass', costUsd: 0.01, iterations: 2 }, after: { status: 'pass', costUsd: 0.05, iterations: 6 }, change: 'same', grew: ['cost', 'iterations'], details: [] },
      { caseId: 'gone', before: { status: 'pass', costUsd: 0.01, iterations: 2 }, after: undefined, change: 'regression', grew: [], details: [] },
      { caseId: 'new', before: undefined, after: { status: 'error', costUsd: 0.01, iterations: 2 }, change: 'same', grew: [], details: [] },
    ]);
  });
});
