/**
 * `stepwise eval` (docs/evals.md): runs a suite's cases as real runs, a few at a time, judges
 * their checks, prints the table and writes the JSON report; `--compare` names the regressions
 * against an earlier report; `--from-runs` writes a suite made from recorded runs instead. The
 * exit code: 0 all passed, 1 a case failed or errored or a regression was found, 2 a suite or
 * report that could not be read (every problem named).
 */
import { readFile, writeFile } from 'node:fs/promises';
import type { ApiClient } from '../../functions/api/client.js';
import type { RunView } from '../../functions/api/schemas.js';
import { evaluateCase } from '../../functions/core/evals/checks.js';
import { allPassed, buildReport, compare, renderComparison, renderReport } from '../../functions/core/evals/report.js';
import { readSuite, type RecordedRun, suiteFromRuns } from '../../functions/core/evals/suite.js';
import { type CaseResult, type Comparison, EvalReport, type EvalSuite, type SuiteIssue } from '../../functions/core/evals/types.js';
import { runCase } from './eval-case.js';
import { Progress, type ProgressStream } from './progress.js';

export interface EvalOptions {
  /** Cases running at once. */
  concurrency: number;
  /** An earlier report to compare with. */
  compare?: string;
  /** Where the report goes (with `fromRuns`: the suite). */
  out?: string;
  /** Write a suite made from these runs instead of running one. */
  fromRuns?: string[];
  /** How long a case's run may take, in seconds. */
  timeout: number;
  markdown: boolean;
  /** Print the report (and the comparison) as JSON instead of the table. */
  json: boolean;
}

/** What the command reads and writes: Node's by default, the test's in a test. */
export interface EvalIo {
  stdout(text: string): void;
  stderr: ProgressStream;
  readFile(path: string): Promise<string>;
  writeFile(path: string, text: string): Promise<void>;
  now(): Date;
}

export const nodeIo: EvalIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: process.stderr,
  readFile: (path) => readFile(path, 'utf8'),
  writeFile: (path, text) => writeFile(path, text),
  now: () => new Date(),
};

export const exitCodes = { passed: 0, failed: 1, unreadable: 2 } as const;

/** Runs `work` over `items`, at most `limit` at once, the results in the items' order. */
export async function inPool<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

function refused(io: EvalIo, what: string, issues: readonly SuiteIssue[]): number {
  io.stderr.write(`error: ${what} (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n${issues.map((i) => `  ${i.path}: ${i.message}\n`).join('')}`);
  return exitCodes.unreadable;
}

/** What the cases ran, as the report names it: what a run recorded (with its version), else what the suite asked for. */
export function targetOf(suite: EvalSuite, run?: RunView): string {
  if (run?.agent) return `agent ${run.agent.name}@${run.agent.version}`;
  if (run?.workflow) return `workflow ${run.workflow.name}@${run.workflow.version}`;
  const version = suite.agentVersion ? `@${suite.agentVersion}` : '';
  if (suite.agent) return `agent ${suite.agent}${version}`;
  if (suite.workflow) return `workflow ${suite.workflow}${version}`;
  return suite.mode === 'single' ? `agent assistant${version}` : `workflow plan-and-build${version}`;
}

/** The report's default file: `eval-<suite>-<UTC time>.json` here. */
export function defaultReportPath(suite: string, at: Date): string {
  const slug = suite.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'suite';
  return `eval-${slug}-${at.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}.json`;
}

/** Reads an earlier report, or says what is wrong with it. */
async function readReport(io: EvalIo, path: string): Promise<{ report: EvalReport } | { issues: SuiteIssue[] }> {
  let value: unknown;
  try {
    value = JSON.parse(await io.readFile(path));
  } catch (error) {
    return { issues: [{ path: '(report)', message: error instanceof Error ? error.message : String(error) }] };
  }
  const parsed = EvalReport.safeParse(value);
  if (parsed.success) return { report: parsed.data };
  return { issues: parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.') || '(report)', message: i.message })) };
}

/** `stepwise eval --from-runs`: the suite made from the runs, to `out` or stdout. */
async function fromRuns(api: ApiClient, runIds: readonly string[], options: EvalOptions, io: EvalIo): Promise<number> {
  const runs: RecordedRun[] = [];
  const missing: SuiteIssue[] = [];
  for (const runId of runIds) {
    try {
      runs.push(await api.getRun(runId));
    } catch (error) {
      missing.push({ path: runId, message: error instanceof Error ? error.message : String(error) });
    }
  }
  if (missing.length) return refused(io, 'runs that could not be read', missing);
  const reading = suiteFromRuns(runs);
  if (!reading.ok) return refused(io, 'no suite from these runs', reading.issues);
  const text = `${JSON.stringify(reading.suite, null, 2)}\n`;
  if (options.out) {
    await io.writeFile(options.out, text);
    io.stderr.write(`suite: ${options.out} (${reading.suite.cases.length} cases)\n`);
  } else io.stdout(text);
  return exitCodes.passed;
}

/** The `eval` command; answers its exit code. */
export async function evalCommand(api: ApiClient, suitePath: string | undefined, options: EvalOptions, io: EvalIo = nodeIo): Promise<number> {
  if (options.fromRuns?.length) return fromRuns(api, options.fromRuns, options, io);
  if (!suitePath) return refused(io, 'no suite', [{ path: '<suite>', message: 'name a suite file, or recorded runs with --from-runs' }]);
  let text: string;
  try {
    text = await io.readFile(suitePath);
  } catch (error) {
    return refused(io, `${suitePath} could not be read`, [{ path: suitePath, message: error instanceof Error ? error.message : String(error) }]);
  }
  const reading = readSuite(text);
  if (!reading.ok) return refused(io, `${suitePath} is not a valid suite; nothing was run`, reading.issues);
  // A report to compare with is read before any run starts: a bad one costs nothing.
  const before = options.compare ? await readReport(io, options.compare) : undefined;
  if (before && 'issues' in before) return refused(io, `${options.compare ?? ''} is not an eval report`, before.issues);

  const suite = reading.suite;
  const startedAt = io.now();
  const progress = new Progress(suite.cases.length, io.stderr);
  let seen: RunView | undefined;
  const cases = await inPool(suite.cases, options.concurrency, async (kase): Promise<CaseResult> => {
    const { outcome, run } = await runCase(api, suite, kase, { timeoutMs: options.timeout * 1000 });
    seen ??= run;
    const result = evaluateCase(kase, outcome);
    progress.caseDone(result);
    return result;
  });
  progress.end();
  const report = buildReport({ suite: suite.name, target: targetOf(suite, seen), startedAt, finishedAt: io.now(), cases });
  const comparison: Comparison | undefined = before ? compare(before.report, report) : undefined;

  const out = options.out ?? defaultReportPath(suite.name, startedAt);
  await io.writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
  if (options.json) io.stdout(`${JSON.stringify({ report, ...(comparison ? { comparison } : {}) }, null, 2)}\n`);
  else {
    io.stdout(`${renderReport(report, options.markdown ? 'markdown' : 'terminal')}\n`);
    if (comparison) io.stdout(`\ncompared with ${options.compare ?? ''}:\n${renderComparison(comparison)}\n`);
  }
  io.stderr.write(`report: ${out}\n`);
  return allPassed(report) && !comparison?.regressions.length ? exitCodes.passed : exitCodes.failed;
}
