/**
 * Evals' pure core (DESIGN §13, docs/evals.md): a suite read whole or refused with every bad path
 * named, a suite made from recorded runs, each check judged on an observed run, and a case's
 * status (an error is never a pass).
 */
import { describe, expect, it } from 'vitest';
import { checkLabel, evaluateCase, evaluateCheck } from '../../functions/core/evals/checks.js';
import { parseSuite, readSuite, referenceRubric, suiteFromRuns } from '../../functions/core/evals/suite.js';
import type { Check, EvalCase, ObservedRun } from '../../functions/core/evals/types.js';

const observed = (over: Partial<ObservedRun> = {}): ObservedRun => ({
  runId: 'r1',
  status: 'succeeded',
  answer: 'The answer is 42.',
  toolCalls: [{ name: 'write_file' }, { name: 'read_file' }, { name: 'write_file' }],
  files: [{ path: 'src/out.txt', text: 'hello world' }, { path: 'bin.dat' }],
  costUsd: 0.002,
  tokens: { input: 100, output: 20 },
  iterations: 3,
  durationMs: 1500,
  ...over,
});

const passes = (check: Check, run = observed()) => evaluateCheck(check, run).pass;

describe('parseSuite', () => {
  it('takes a valid suite as it is', () => {
    const suite = { name: 's', mode: 'single', cases: [{ id: 'a', goal: 'g', files: { 'in.txt': 'x' }, expect: [{ type: 'contains', value: '42' }] }] };
    expect(parseSuite(suite)).toEqual({ ok: true, suite });
  });

  it('refuses a suite whole, naming every bad path at once: the schema\'s, then those of ids, patterns, schemas and paths', () => {
    const reading = parseSuite({
      name: 's',
      agent: 'a',
      mode: 'single',
      cases: [
        { id: 'one', goal: 'g', expect: [{ type: 'regex', pattern: '(' }, { type: 'contains' }, { type: 'nope' }] },
        { id: 'one', goal: 'g', files: { '../x': 'y' }, expect: [{ type: 'fileExists', path: '/etc/passwd' }, { type: 'jsonSchema', schema: { type: 'string' } }] },
      ],
    });
    expect(reading.ok ? [] : reading.issues.map((i) => i.path)).toEqual([
      'cases.0.expect.1.value',
      'cases.0.expect.2.type',
      'mode',
      'cases.0.expect.0.pattern',
      'cases.1.id',
      'cases.1.files.../x',
      'cases.1.expect.0.path',
      'cases.1.expect.1.schema',
    ]);
  });

  it('refuses a case without checks, a suite without cases, an unknown field, and seeded files over the limit', () => {
    const paths = (value: unknown) => {
      const reading = parseSuite(value);
      return reading.ok ? [] : reading.issues.map((i) => i.path);
    };
    expect(paths({ name: 's', cases: [] })).toEqual(['cases']);
    expect(paths({ name: 's', extra: 1, cases: [{ id: 'a', goal: 'g', expect: [] }] })).toEqual(['cases.0.expect', '(suite)']);
    expect(paths({ name: 's', cases: [{ id: 'a', goal: 'g', files: { 'big.txt': 'x'.repeat(1_000_001) }, expect: [{ type: 'maxIterations', value: 3 }] }] })).toEqual(['cases.0.files']);
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}.txt`, '']));
    expect(paths({ name: 's', cases: [{ id: 'a', goal: 'g', files: many, expect: [{ type: 'maxIterations', value: 3 }] }] })).toEqual(['cases.0.files']);
  });

  it('reads a file: text that is not JSON is one issue', () => {
    const reading = readSuite('{ nope');
    expect(reading.ok).toBe(false);
    expect(reading.ok ? '' : reading.issues[0]?.message).toMatch(/^is not JSON/);
  });
});

describe('suiteFromRuns', () => {
  const run = (runId: string, over: object = {}) => ({
    runId,
    goal: `goal of ${runId}`,
    mode: 'single' as const,
    agent: { name: 'assistant', version: 'v1' },
    status: 'succeeded',
    result: { response: `answer of ${runId}` },
    ...over,
  });

  it('makes a case per run, graded against its recorded answer, pinned to the agent version it ran', () => {
    const reading = suiteFromRuns([run('r1'), run('r2', { result: { response: 'x', output: { n: 1 } } })], 'nightly');
    expect(reading).toEqual({
      ok: true,
      suite: {
        name: 'nightly',
        description: "Made from runs r1, r2: each case's reference is the run's answer.",
        agent: 'assistant',
        agentVersion: 'v1',
        cases: [
          { id: '01-r1', goal: 'goal of r1', expect: [{ type: 'judge', rubric: referenceRubric('answer of r1') }] },
          { id: '02-r2', goal: 'goal of r2', expect: [{ type: 'judge', rubric: referenceRubric('{"n":1}') }] },
        ],
      },
    });
  });

  it('refuses runs without an answer and runs of another agent, naming each', () => {
    const reading = suiteFromRuns([run('r1'), run('r2', { status: 'failed', result: undefined }), run('r3', { agent: { name: 'other', version: 'v' } })]);
    expect(reading.ok ? [] : reading.issues.map((i) => i.path)).toEqual(['r2', 'r3']);
    expect(suiteFromRuns([]).ok).toBe(false);
  });
});

describe('evaluateCheck', () => {
  it('judges text checks on the final answer', () => {
    expect(passes({ type: 'contains', value: '42' })).toBe(true);
    expect(passes({ type: 'contains', value: '43' })).toBe(false);
    expect(passes({ type: 'equals', value: ' The answer is 42.\n' })).toBe(true);
    expect(passes({ type: 'equals', value: 'The answer is 42' })).toBe(false);
    expect(passes({ type: 'regex', pattern: 'answer is \\d+' })).toBe(true);
    expect(passes({ type: 'regex', pattern: '^answer', flags: 'i' })).toBe(false);
    expect(passes({ type: 'regex', pattern: '^the ANSWER', flags: 'i' })).toBe(true);
  });

  it('judges jsonSchema on the structured answer, else on the answer read as JSON', () => {
    const schema = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] };
    expect(passes({ type: 'jsonSchema', schema }, observed({ output: { n: 1 } }))).toBe(true);
    expect(passes({ type: 'jsonSchema', schema }, observed({ answer: '{"n": 2}' }))).toBe(true);
    expect(evaluateCheck({ type: 'jsonSchema', schema }, observed({ answer: '{"n": "x"}' }))).toEqual({
      label: 'jsonSchema',
      type: 'jsonSchema',
      pass: false,
      reason: '/n: must be number',
    });
    expect(evaluateCheck({ type: 'jsonSchema', schema }, observed()).reason).toMatch(/^the answer is not JSON/);
  });

  it('counts tool calls: at least once, or exactly `times`', () => {
    expect(passes({ type: 'toolCalled', tool: 'write_file' })).toBe(true);
    expect(passes({ type: 'toolCalled', tool: 'write_file', times: 2 })).toBe(true);
    expect(evaluateCheck({ type: 'toolCalled', tool: 'write_file', times: 1 }, observed())).toMatchObject({ pass: false, reason: 'write_file was called 2 times, not 1' });
    expect(passes({ type: 'toolCalled', tool: 'calculator' })).toBe(false);
    expect(passes({ type: 'toolCalled', tool: 'calculator', times: 0 })).toBe(true);
  });

  it('looks at the workspace: a file that exists, and its text', () => {
    expect(passes({ type: 'fileExists', path: './src//out.txt' })).toBe(true);
    expect(passes({ type: 'fileExists', path: 'src/missing.txt' })).toBe(false);
    expect(passes({ type: 'fileContains', path: 'src/out.txt', value: 'world' })).toBe(true);
    expect(passes({ type: 'fileContains', path: 'src/out.txt', value: 'moon' })).toBe(false);
    expect(evaluateCheck({ type: 'fileContains', path: 'bin.dat', value: 'x' }, observed()).reason).toBe('bin.dat could not be read as text');
  });

  it('holds cost and model calls to their limits (inclusive)', () => {
    expect(passes({ type: 'maxCostUsd', value: 0.002 })).toBe(true);
    expect(passes({ type: 'maxCostUsd', value: 0.0019 })).toBe(false);
    expect(passes({ type: 'maxIterations', value: 3 })).toBe(true);
    expect(passes({ type: 'maxIterations', value: 2 })).toBe(false);
  });

  it("takes a judge check's verdict from its grader, and fails it without one", () => {
    const check: Check = { type: 'judge', rubric: 'Says 42.' };
    expect(evaluateCheck(check, observed(), { pass: true, reason: 'it does' })).toEqual({ label: 'judge "Says 42."', type: 'judge', pass: true, reason: 'it does' });
    expect(evaluateCheck(check, observed(), { pass: false, reason: 'it does not' }).pass).toBe(false);
    expect(evaluateCheck(check, observed()).pass).toBe(false);
  });

  it('labels each check on one line', () => {
    expect(checkLabel({ type: 'toolCalled', tool: 'write_file', times: 2 })).toBe('toolCalled write_file ×2');
    expect(checkLabel({ type: 'contains', value: `a\n${'b'.repeat(60)}` })).toBe(`contains "a ${'b'.repeat(37)}…"`);
  });
});

describe('evaluateCase', () => {
  const kase: EvalCase = { id: 'c', goal: 'g', expect: [{ type: 'contains', value: '42' }, { type: 'judge', rubric: 'r' }] };
  const verdicts = new Map([[1, { pass: true, reason: 'ok' }]]);

  it('passes when every check holds, and fails when one does not', () => {
    expect(evaluateCase(kase, { observed: observed(), verdicts })).toEqual({
      id: 'c',
      goal: 'g',
      status: 'pass',
      runId: 'r1',
      checks: [
        { label: 'contains "42"', type: 'contains', pass: true, reason: 'the answer contains "42"' },
        { label: 'judge "r"', type: 'judge', pass: true, reason: 'ok' },
      ],
      costUsd: 0.002,
      tokens: { input: 100, output: 20 },
      iterations: 3,
      durationMs: 1500,
    });
    expect(evaluateCase(kase, { observed: observed({ answer: 'no' }), verdicts }).status).toBe('fail');
  });

  it('is an error when the run could not be judged: refused, cancelled, a fault, or a grader that failed', () => {
    expect(evaluateCase(kase, { error: 'HTTP 400: unknown agent', durationMs: 5 })).toMatchObject({ status: 'error', error: 'HTTP 400: unknown agent', checks: [], durationMs: 5 });
    expect(evaluateCase(kase, { observed: observed({ status: 'cancelled' }), verdicts }).status).toBe('error');
    const fault = observed({ status: 'failed', error: { code: 'ScriptExhausted', message: 'no turns left' } });
    expect(evaluateCase(kase, { observed: fault, verdicts })).toMatchObject({ status: 'error', error: 'the run failed: ScriptExhausted: no turns left', checks: [] });
    expect(evaluateCase(kase, { observed: observed(), judgeError: 'the judge run failed' })).toMatchObject({ status: 'error', error: 'the grader failed: the judge run failed' });
  });

  it("fails (not errors) a run that ended by the agent's own failure, whatever its checks say", () => {
    const spent = observed({ status: 'failed', error: { code: 'MaxIterationsExceeded', message: 'limit 3' } });
    expect(evaluateCase(kase, { observed: spent, verdicts })).toMatchObject({ status: 'fail', error: 'the run failed: MaxIterationsExceeded: limit 3' });
    expect(evaluateCase(kase, { observed: spent, verdicts }).checks.map((c) => c.pass)).toEqual([true, true]);
  });
});
