/**
 * Judging a case: each check against what its run was seen to do (`ObservedRun`), pure; the
 * verdicts of `judge` checks come from the grader that ran them. A case is `error` when it could
 * not be judged, never a pass.
 */
import { describeErrors, validatorOf } from '../tools/json-schema.js';
import type { CaseResult, CaseStatus, Check, CheckResult, EvalCase, JudgeVerdict, ObservedRun } from './types.js';

/**
 * A run's own failures: the agent did not do the task (it ran out of iterations or budget, gave
 * no plan or answer, refused). The case fails. Any other end (a fault of the deployment, a
 * timeout, a cancel, a script run out) says nothing of the agent: the case is an error.
 */
export const agentFailures: readonly string[] = ['MaxIterationsExceeded', 'ModelRefused', 'NoPlanProduced', 'NoAnswer', 'BudgetExceeded', 'ContextWindowExceeded'];

/** A value shown in a label or reason: quoted, on one line, cut. */
export function quote(value: string, max = 40): string {
  const flat = value.replace(/\s+/g, ' ');
  return JSON.stringify(flat.length > max ? `${flat.slice(0, max - 1)}…` : flat);
}

/** A workspace path as the workspace names it: `./a//b` is `a/b`. */
function normalPath(path: string): string {
  return path
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .join('/');
}

/** A check on one line, e.g. `contains "42"`, `toolCalled write_file ×2`: what reports and comparisons name it by. */
export function checkLabel(check: Check): string {
  switch (check.type) {
    case 'contains':
    case 'equals':
      return `${check.type} ${quote(check.value)}`;
    case 'regex':
      return `regex /${check.pattern}/${check.flags ?? ''}`;
    case 'jsonSchema':
      return 'jsonSchema';
    case 'toolCalled':
      return `toolCalled ${check.tool}${check.times === undefined ? '' : ` ×${check.times}`}`;
    case 'fileExists':
      return `fileExists ${normalPath(check.path)}`;
    case 'fileContains':
      return `fileContains ${normalPath(check.path)} ${quote(check.value)}`;
    case 'maxCostUsd':
      return `maxCostUsd ${check.value}`;
    case 'maxIterations':
      return `maxIterations ${check.value}`;
    case 'judge':
      return `judge ${quote(check.rubric)}`;
  }
}

/** The structured answer, or the answer's text read as JSON; `undefined` when it is neither. */
function jsonAnswer(observed: ObservedRun): { value: unknown } | undefined {
  if (observed.output) return { value: observed.output };
  try {
    return { value: JSON.parse(observed.answer) as unknown };
  } catch {
    return undefined;
  }
}

/** Whether one check holds, and why (or why not). A `judge` check takes its grader's verdict. */
export function evaluateCheck(check: Check, observed: ObservedRun, verdict?: JudgeVerdict): CheckResult {
  const result = (pass: boolean, reason: string): CheckResult => ({ label: checkLabel(check), type: check.type, pass, reason });
  const answer = observed.answer;
  const shown = `the answer is ${quote(answer, 80)}`;
  switch (check.type) {
    case 'contains':
      return answer.includes(check.value) ? result(true, `the answer contains ${quote(check.value)}`) : result(false, shown);
    case 'equals':
      return answer.trim() === check.value.trim() ? result(true, 'the answer is equal') : result(false, shown);
    case 'regex':
      return new RegExp(check.pattern, check.flags).test(answer) ? result(true, 'the answer matches') : result(false, shown);
    case 'jsonSchema': {
      const json = jsonAnswer(observed);
      if (!json) return result(false, `the answer is not JSON: ${quote(answer, 80)}`);
      const validate = validatorOf(check.schema);
      return validate(json.value) ? result(true, 'the answer matches the schema') : result(false, describeErrors(validate.errors ?? [], '(answer)'));
    }
    case 'toolCalled': {
      const count = observed.toolCalls.filter((call) => call.name === check.tool).length;
      const pass = check.times === undefined ? count > 0 : count === check.times;
      return result(pass, `${check.tool} was called ${count === 1 ? 'once' : `${count} times`}${check.times === undefined || pass ? '' : `, not ${check.times}`}`);
    }
    case 'fileExists': {
      const path = normalPath(check.path);
      return observed.files.some((f) => f.path === path) ? result(true, `${path} exists`) : result(false, `no file ${path} in the workspace`);
    }
    case 'fileContains': {
      const path = normalPath(check.path);
      const file = observed.files.find((f) => f.path === path);
      if (!file) return result(false, `no file ${path} in the workspace`);
      if (file.text === undefined) return result(false, `${path} could not be read as text`);
      return file.text.includes(check.value) ? result(true, `${path} contains ${quote(check.value)}`) : result(false, `${path} is ${quote(file.text, 80)}`);
    }
    case 'maxCostUsd':
      return result(observed.costUsd <= check.value, `the run cost $${observed.costUsd.toFixed(4)}`);
    case 'maxIterations':
      return result(observed.iterations <= check.value, `the run made ${observed.iterations} model calls`);
    case 'judge':
      return verdict ? result(verdict.pass, verdict.reason) : result(false, 'no verdict: the grader did not answer');
  }
}

/** How a case's run went: seen to its end (with the verdicts of its `judge` checks, by check index), or not judged at all. */
export type CaseOutcome =
  | { observed: ObservedRun; verdicts?: ReadonlyMap<number, JudgeVerdict>; judgeError?: string }
  | { error: string; runId?: string; durationMs?: number };

const zeroTokens = { input: 0, output: 0 };

/** A case's result: its checks judged, its status, and what its run spent. */
export function evaluateCase(kase: EvalCase, outcome: CaseOutcome): CaseResult {
  const base = { id: kase.id, goal: kase.goal };
  if ('error' in outcome) {
    return {
      ...base,
      status: 'error',
      ...(outcome.runId ? { runId: outcome.runId } : {}),
      checks: [],
      error: outcome.error,
      costUsd: 0,
      tokens: zeroTokens,
      iterations: 0,
      durationMs: outcome.durationMs ?? 0,
    };
  }
  const { observed } = outcome;
  const checks = kase.expect.map((check, i) => evaluateCheck(check, observed, outcome.verdicts?.get(i)));
  const { status, error } = statusOf(observed, checks, outcome.judgeError);
  // A run that ended by no doing of the agent's was not judged: its checks are not reported as failed.
  const judged = status === 'error' && observed.status !== 'succeeded' ? [] : checks;
  return {
    ...base,
    status,
    runId: observed.runId,
    checks: judged,
    ...(error ? { error } : {}),
    costUsd: observed.costUsd,
    tokens: observed.tokens,
    iterations: observed.iterations,
    durationMs: observed.durationMs,
  };
}

function statusOf(observed: ObservedRun, checks: readonly CheckResult[], judgeError?: string): { status: CaseStatus; error?: string } {
  const runError = observed.error ? `${observed.error.code}: ${observed.error.message}` : undefined;
  if (observed.status === 'cancelled') return { status: 'error', error: `the run was cancelled${runError ? ` (${runError})` : ''}` };
  if (observed.status === 'failed') {
    const agentsOwn = observed.error !== undefined && agentFailures.includes(observed.error.code);
    return { status: agentsOwn ? 'fail' : 'error', error: `the run failed: ${runError ?? 'no error recorded'}` };
  }
  if (judgeError) return { status: 'error', error: `the grader failed: ${judgeError}` };
  return { status: checks.every((c) => c.pass) ? 'pass' : 'fail' };
}
