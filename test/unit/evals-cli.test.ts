/**
 * The parts of `stepwise eval` (docs/evals.md) that need no server: the pool that bounds the cases
 * running at once, the progress on stderr (a bar on a terminal, lines elsewhere), the body of a
 * case's run, the judge's prompt, what the report names as the target, its default file, and the
 * refusal of a suite or report that cannot be read (exit 2, nothing run).
 */
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../functions/api/client.js';
import type { CaseResult } from '../../functions/core/evals/types.js';
import { ApiError } from '../../bin/cli/client.js';
import { caseBody, judgePrompt, runCase } from '../../bin/cli/eval-case.js';
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

describe('runCase, against a fake API', () => {
  type Fake = Partial<Record<keyof ApiClient, (...args: never[]) => Promise<unknown>>>;
  const running = { runId: 'r1', status: 'running', waitingFor: [] };
  const done = {
    runId: 'r1',
    status: 'succeeded',
    waitingFor: [],
    result: { response: 'The sum is 5.' },
    iterations: { single: 2 },
    usage: { inputTokens: 10, outputTokens: 3, cacheReadInputTokens: 5, cacheCreationInputTokens: 0 },
    estimatedCostUsd: 0.001,
    agent: { name: 'assistant', version: 'v1' },
  };
  const kase = { id: 'c', goal: 'Add.', expect: [{ type: 'fileContains' as const, path: './out.txt', value: '5' }, { type: 'judge' as const, rubric: 'Says 5.' }] };
  const suite = { name: 's', mode: 'single' as const, cases: [kase] };
  const options = { timeoutMs: 5_000, pollMs: 1 };

  function fakeApi(over: Fake = {}) {
    const calls: string[] = [];
    let polls = 0;
    const fake: Fake = {
      startRun: async (body: never) => {
        calls.push(`start ${(body as { goal: string }).goal.slice(0, 5)}`);
        return { runId: calls.length === 1 ? 'r1' : 'j1', status: 'running', phase: 'idle' };
      },
      getRun: async (runId: never) =>
        runId === 'j1' ? { ...done, runId: 'j1', result: { response: 'ok', output: { pass: true, reason: 'It says 5.' } } } : polls++ < 2 ? running : done,
      cancelRun: async (runId: never) => void calls.push(`cancel ${runId}`),
      messages: async (_runId: never, query: never) =>
        (query as { cursor?: string }).cursor
          ? { items: [{ seq: 3, agent: 'single', role: 'assistant', content: [{ type: 'tool_use', id: 't2', name: 'write_file', input: {} }] }] }
          : { items: [{ seq: 1, agent: 'single', role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: {} }] }], nextCursor: '2' },
      files: async () => ({ items: [{ path: 'out.txt', size: 1 }, { path: 'other.bin', size: 1 }] }),
      file: async (_runId: never, path: never) => {
        calls.push(`read ${path}`);
        return new Response('5');
      },
      ...over,
    };
    return { api: fake as unknown as ApiClient, calls };
  }

  it('follows the run to its end, reads every page of tool calls and only the files a check reads, then asks the judge', async () => {
    const { api, calls } = fakeApi();
    const { outcome, run } = await runCase(api, suite, kase, options);
    expect(run?.runId).toBe('r1');
    if ('error' in outcome) throw new Error(outcome.error);
    expect({ ...outcome.observed, durationMs: 0 }).toEqual({
      runId: 'r1',
      status: 'succeeded',
      answer: 'The sum is 5.',
      toolCalls: [{ name: 'read_file', input: {} }, { name: 'write_file', input: {} }],
      files: [{ path: 'out.txt', text: '5' }, { path: 'other.bin' }],
      costUsd: 0.001,
      tokens: { input: 15, output: 3 },
      iterations: 2,
      durationMs: 0,
    });
    expect([...(outcome.verdicts ?? new Map()).entries()]).toEqual([[1, { pass: true, reason: 'It says 5.' }]]);
    expect(calls).toEqual(['start Add.', 'read out.txt', 'start Grade']);
  });

  it('makes a refused run, a run waiting for a reviewer and a run past its time errors, cancelling the runs', async () => {
    const refused = fakeApi({ startRun: async () => Promise.reject(new ApiError(400, 'ValidationFailed', 'The body is invalid.', [{ path: 'agentVersion', message: 'is v2' }])) });
    expect((await runCase(refused.api, suite, kase, options)).outcome).toMatchObject({ error: 'HTTP 400 ValidationFailed: The body is invalid. (agentVersion: is v2)' });

    const waiting = fakeApi({ getRun: async () => ({ ...running, waitingFor: [{ name: 'write_file' }] }) });
    expect((await runCase(waiting.api, suite, kase, options)).outcome).toMatchObject({ runId: 'r1', error: 'the run waits for a reviewer to decide write_file; an eval has no reviewer' });
    expect(waiting.calls).toContain('cancel r1');

    const slow = fakeApi({ getRun: async () => running });
    expect((await runCase(slow.api, suite, kase, { timeoutMs: 0, pollMs: 1 })).outcome).toMatchObject({ error: 'the run did not end within 0 s' });
    expect(slow.calls).toContain('cancel r1');
  });

  it('is an error when the judge gives no verdict', async () => {
    const { api } = fakeApi({ getRun: async (runId: never) => (runId === 'j1' ? { ...done, runId: 'j1', status: 'failed', error: { code: 'MaxIterationsExceeded', message: 'x' } } : done) });
    expect((await runCase(api, suite, kase, options)).outcome).toMatchObject({ judgeError: 'judge run j1 failed (MaxIterationsExceeded: x) without a verdict' });
  });
});
