/**
 * Reading a suite: refused whole, with every bad path named, or taken as it is; and a suite made
 * from recorded runs, their answers the reference.
 */
import { schemaProblems } from '../output/answer.js';
import { checkPath } from '../workspace/paths.js';
import { Check, EvalCase, EvalSuite, maxCaseFileBytes, maxCaseFiles, type SuiteIssue } from './types.js';

export type SuiteReading = { ok: true; suite: EvalSuite } | { ok: false; issues: SuiteIssue[] };

/** A zod path as the API names fields: `cases.2.expect.0.pattern`; the suite itself is `(suite)`. */
function pathOf(path: readonly PropertyKey[]): string {
  return path.length ? path.map(String).join('.') : '(suite)';
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The problems zod cannot see from one field alone: two targets, duplicate ids, patterns and
 * schemas that do not compile, paths the workspace refuses. Read from the suite as given, each
 * case's files and each check on their own, so a suite with other bad fields has these named too.
 */
function deeperIssues(value: unknown): SuiteIssue[] {
  const suite = isRecord(value) ? value : {};
  const issues: SuiteIssue[] = [];
  const targets = (['agent', 'workflow', 'mode'] as const).filter((key) => suite[key] !== undefined);
  if (targets.length > 1) issues.push({ path: targets[1] ?? 'agent', message: 'name one of agent, workflow or mode' });
  const seen = new Set<unknown>();
  (Array.isArray(suite.cases) ? suite.cases : []).forEach((item: unknown, i) => {
    const kase = isRecord(item) ? item : {};
    if (typeof kase.id === 'string' && seen.has(kase.id)) issues.push({ path: `cases.${i}.id`, message: `"${kase.id}" is the id of an earlier case; ids must be unique` });
    seen.add(kase.id);
    const files = EvalCase.shape.files.safeParse(kase.files);
    if (files.success && files.data) issues.push(...fileIssues(files.data, `cases.${i}`));
    (Array.isArray(kase.expect) ? kase.expect : []).forEach((entry: unknown, j) => {
      const check = Check.safeParse(entry);
      if (check.success) issues.push(...checkIssues(check.data, `cases.${i}.expect.${j}`));
    });
  });
  return issues;
}

function checkIssues(check: Check, at: string): SuiteIssue[] {
  if (check.type === 'regex') {
    try {
      new RegExp(check.pattern, check.flags);
    } catch (error) {
      return [{ path: `${at}.pattern`, message: `is not a regular expression: ${error instanceof Error ? error.message : String(error)}` }];
    }
  }
  if (check.type === 'jsonSchema') return schemaProblems(check.schema).map((message) => ({ path: `${at}.schema`, message }));
  if (check.type === 'fileExists' || check.type === 'fileContains') {
    const problem = pathProblem(check.path);
    if (problem) return [{ path: `${at}.path`, message: problem }];
  }
  return [];
}

function pathProblem(path: string): string | undefined {
  try {
    checkPath(path);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

function fileIssues(seeded: Record<string, string>, at: string): SuiteIssue[] {
  const files = Object.entries(seeded);
  const issues = files.flatMap(([path]) => {
    const problem = pathProblem(path);
    return problem ? [{ path: `${at}.files.${path}`, message: problem }] : [];
  });
  const size = files.reduce((sum, [, text]) => sum + new TextEncoder().encode(text).length, 0);
  if (size > maxCaseFileBytes) issues.push({ path: `${at}.files`, message: `are ${size} bytes together; a case may seed at most ${maxCaseFileBytes}` });
  if (files.length > maxCaseFiles) issues.push({ path: `${at}.files`, message: `are ${files.length} files; a case may seed at most ${maxCaseFiles}` });
  return issues;
}

/** A suite from parsed JSON: every problem named (the schema's first, then the deeper ones), or the suite. */
export function parseSuite(value: unknown): SuiteReading {
  const parsed = EvalSuite.safeParse(value);
  const issues = [...(parsed.success ? [] : parsed.error.issues.map((issue) => ({ path: pathOf(issue.path), message: issue.message }))), ...deeperIssues(value)];
  return parsed.success && !issues.length ? { ok: true, suite: parsed.data } : { ok: false, issues };
}

/** A suite from a file's text: JSON, then the schema. */
export function readSuite(text: string): SuiteReading {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, issues: [{ path: '(suite)', message: `is not JSON: ${error instanceof Error ? error.message : String(error)}` }] };
  }
  return parseSuite(value);
}

/** What a recorded run gives a suite: its goal, what it ran, and its answer. */
export interface RecordedRun {
  runId: string;
  goal: string;
  mode: 'single' | 'multi';
  agent?: { name: string; version: string } | undefined;
  workflow?: { name: string; version: string } | undefined;
  status: string;
  result?: { response: string; output?: Record<string, unknown> | undefined } | undefined;
}

/** The rubric that grades an answer against a recorded one. */
export function referenceRubric(reference: string): string {
  return `The answer gives the same result as this reference answer (wording may differ; facts, numbers and names must agree):\n\n${reference}`;
}

/**
 * A suite from recorded runs that succeeded: one case each, its goal the run's, graded by a
 * judge against the run's answer (its structured answer, when it has one). The suite runs what
 * the first run ran, at its version; runs of something else are refused, as is a run without an
 * answer, each named.
 */
export function suiteFromRuns(runs: readonly RecordedRun[], name = 'from-runs'): SuiteReading {
  const [first] = runs;
  if (!first) return { ok: false, issues: [{ path: 'runs', message: 'name at least one run' }] };
  const targetOf = (run: RecordedRun) => (run.agent ? `agent ${run.agent.name}` : run.workflow ? `workflow ${run.workflow.name}` : `mode ${run.mode}`);
  const issues: SuiteIssue[] = [];
  for (const run of runs) {
    if (run.status !== 'succeeded' || !run.result) issues.push({ path: run.runId, message: `is ${run.status}; only a run that succeeded has an answer to compare with` });
    else if (targetOf(run) !== targetOf(first)) issues.push({ path: run.runId, message: `ran ${targetOf(run)}, not ${targetOf(first)} as ${first.runId} did; a suite runs one` });
  }
  if (issues.length) return { ok: false, issues };
  const pinned = first.agent ?? first.workflow;
  const suite = {
    name,
    description: `Made from runs ${runs.map((r) => r.runId).join(', ')}: each case's reference is the run's answer.`,
    ...(first.agent ? { agent: first.agent.name } : first.workflow ? { workflow: first.workflow.name } : { mode: first.mode }),
    ...(pinned ? { agentVersion: pinned.version } : {}),
    cases: runs.map((run, i) => ({
      id: `${String(i + 1).padStart(2, '0')}-${run.runId.slice(0, 40)}`.replace(/[^A-Za-z0-9._-]/g, '-'),
      goal: run.goal,
      expect: [{ type: 'judge' as const, rubric: referenceRubric(run.result?.output ? JSON.stringify(run.result.output) : (run.result?.response ?? '')) }],
    })),
  };
  return parseSuite(suite);
}
