/**
 * The parts of `stepwise eval` (docs/evals.md) that need no server: the pool that bounds the cases
 * running at once, the progress on stderr (a bar on a terminal, lines elsewhere), the body of a
 * case's run, the judge's prompt, what the report names as the target, its default file, and the
 * refusal of a suite or report that cannot be read (exit 2, nothing run).
 */
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../functions/api/client.js';
import type { CaseResult } from '../../functions/core/evals/types.js';
import { caseBody, judgePrompt } from '../../bin/cli/eval-case.js';
import { defaultReportPath, type EvalIo, evalCommand, inPool, targetOf } from '../../bin/cli/eval.js';
import { Progress } from '../../bin/cli/progress.js';

const result = (id: string, status: CaseResult['status']): CaseResult => ({
  id,
  goal: 'g',
  status,
  checks: [],
  ...(status === 'error' ? { error: 'HTTP 400 ValidationFailed: bad' } : {}),
  costUsd: 0,
  tokens: { input: 0, output: 0 },
  iterations: 0,
  durationMs: 1234,
});

describe('inPool', () => {
  it('runs at most `limit` at once and keeps the results in order', async () => {
    let running = 0;
    let most = 0;
    const results = await inPool([5, 1, 4, 2, 3, 0], 2, async (ms, i) => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, ms));
      running--;
      return i;
    });
    expect([results, most]).toEqual([[0, 1, 2, 3, 4, 5], 2]);
  });
});

describe('Progress', () => {
  const written = (isTTY: boolean) => {
    const out: string[] = [];
    const progress = new Progress(3, { isTTY, write: (text: string) => out.push(text) });
    progress.caseDone(result('a', 'pass'));
    progress.caseDone(result('b', 'error'));
    progress.end();
    return out;
  };

  it('writes a plain line per case when stderr is not a terminal', () => {
    expect(written(false)).toEqual(['[1/3] a PASS 1.2s\n', '[2/3] b ERROR 1.2s (HTTP 400 ValidationFailed: bad)\n']);
  });

  it('redraws a bar in place on a terminal, naming the cases that did not pass above it', () => {
    expect(written(true)).toEqual([
      '[░░░░░░░░░░░░░░░░░░░░░░░░] 0/3 ✓0 ✗0 !0',
      '\r\x1b[2K[████████░░░░░░░░░░░░░░░░] 1/3 ✓1 ✗0 !0',
      '\r\x1b[2K[2/3] b ERROR 1.2s (HTTP 400 ValidationFailed: bad)\n[████████████████░░░░░░░░] 2/3 ✓1 ✗0 !1',
      '\r\x1b[2K',
    ]);
  });
});

describe("a case's run", () => {
  it("starts with the suite's target, version and limit, and the case's goal and files", () => {
    const suite = { name: 's', agent: 'greeter', agentVersion: 'abc', maxIterations: 4, cases: [] };
    expect(caseBody(suite, { id: 'c', goal: 'Hi', files: { 'a.txt': 'x' }, expect: [] })).toEqual({ goal: 'Hi', agent: 'greeter', agentVersion: 'abc', maxIterations: 4, files: { 'a.txt': 'x' } });
    expect(caseBody({ name: 's', mode: 'single', cases: [] }, { id: 'c', goal: 'Hi', expect: [] })).toEqual({ goal: 'Hi', mode: 'single' });
  });

  it('asks the judge with the rubric first, then the task and the answer', () => {
    const prompt = judgePrompt('[[tag]] Says five.', 'Add 2 and 3.', '');
    expect(prompt.indexOf('[[tag]] Says five.')).toBeLessThan(prompt.indexOf('Add 2 and 3.'));
    expect(prompt).toContain("The agent's answer:\n\n(no answer)");
  });
});

describe('the report', () => {
  it('names what ran: the version a run recorded, else what the suite asked for', () => {
    const run = { agent: { name: 'assistant', version: 'v9' } } as Parameters<typeof targetOf>[1];
    expect(targetOf({ name: 's', mode: 'single', cases: [] }, run)).toBe('agent assistant@v9');
    expect(targetOf({ name: 's', workflow: 'review', agentVersion: 'v2', cases: [] })).toBe('workflow review@v2');
    expect(targetOf({ name: 's', cases: [] })).toBe('workflow plan-and-build');
  });

  it('goes to eval-<suite>-<UTC time>.json by default', () => {
    expect(defaultReportPath('My Suite!', new Date('2026-05-01T10:20:30.456Z'))).toBe('eval-my-suite-20260501T102030Z.json');
  });
});

describe('evalCommand', () => {
  const io = (files: Record<string, string>) => {
    const err: string[] = [];
    const value: EvalIo = {
      stdout: () => undefined,
      stderr: { write: (text: string) => err.push(text) },
      readFile: async (path) => {
        const text = files[path];
        if (text === undefined) throw new Error(`ENOENT: ${path}`);
        return text;
      },
      writeFile: async () => undefined,
      now: () => new Date(0),
    };
    return { value, err };
  };
  // Nothing may be run: every method of this client throws.
  const noApi = new Proxy({}, { get: () => () => Promise.reject(new Error('no request may be sent')) }) as ApiClient;
  const options = { concurrency: 1, timeout: 1, markdown: false, json: false };
  const suite = JSON.stringify({ name: 's', cases: [{ id: 'a', goal: 'g', expect: [{ type: 'contains', value: 'x' }] }] });

  it('refuses a suite that fails its schema with every bad path, and runs nothing (exit 2)', async () => {
    const { value, err } = io({ 'suite.json': '{"name":"s","cases":[{"id":"a b","goal":"g","expect":[{"type":"equals"}]}]}' });
    expect(await evalCommand(noApi, 'suite.json', options, value)).toBe(2);
    expect(err.join('')).toBe(
      'error: suite.json is not a valid suite; nothing was run (2 problems):\n  cases.0.id: must be 1-128 letters, digits, ".", "_" or "-"\n  cases.0.expect.0.value: Invalid input: expected string, received undefined\n',
    );
  });

  it('refuses a report to compare with that is not one, before running anything (exit 2)', async () => {
    const { value, err } = io({ 'suite.json': suite, 'old.json': '{"suite":"s"}' });
    expect(await evalCommand(noApi, 'suite.json', { ...options, compare: 'old.json' }, value)).toBe(2);
    expect(err.join('')).toMatch(/^error: old\.json is not an eval report \(5 problems\):\n {2}target: /);
  });
});
