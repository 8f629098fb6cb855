/**
 * Evals' records (docs/evals.md): a suite of cases with their checks, what a case's run was seen
 * to do (`ObservedRun`), and the report of a suite's runs. Schemas only; the logic is in
 * suite.ts, checks.ts and report.ts.
 */
import * as z from 'zod';

const text = z.string().min(1, 'must not be empty');

/** The checks of a case (DESIGN §13); text checks apply to the run's final answer. */
export const Check = z.discriminatedUnion('type', [
  z.object({ type: z.literal('contains'), value: text }).strict(),
  z.object({ type: z.literal('equals'), value: z.string() }).strict(),
  z.object({ type: z.literal('regex'), pattern: text, flags: z.string().regex(/^[imsu]*$/, 'must be some of i, m, s, u').optional() }).strict(),
  z.object({ type: z.literal('jsonSchema'), schema: z.record(z.string(), z.unknown()) }).strict(),
  z.object({ type: z.literal('toolCalled'), tool: text, times: z.number().int().nonnegative().optional() }).strict(),
  z.object({ type: z.literal('fileExists'), path: text }).strict(),
  z.object({ type: z.literal('fileContains'), path: text, value: text }).strict(),
  z.object({ type: z.literal('maxCostUsd'), value: z.number().nonnegative() }).strict(),
  z.object({ type: z.literal('maxIterations'), value: z.number().int().positive() }).strict(),
  z.object({ type: z.literal('judge'), rubric: text.max(10_000, 'must be at most 10,000 characters') }).strict(),
]);
export type Check = z.infer<typeof Check>;
export type CheckType = Check['type'];

/** A case id: what a report and a comparison name the case by. */
export const CaseId = z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_" or "-"');

/** The most files, and bytes of them together, a case may seed: what `POST /runs` takes. */
export { maxSeedBytes as maxCaseFileBytes, maxSeedFiles as maxCaseFiles } from '../intake/types.js';

export const EvalCase = z
  .object({
    id: CaseId,
    goal: text.max(100_000, 'must be at most 100,000 characters'),
    /** Files written into the run's workspace before it starts, by workspace-relative path. */
    files: z.record(z.string().min(1), z.string()).optional(),
    expect: z.array(Check).min(1, 'name at least one check'),
  })
  .strict();
export type EvalCase = z.infer<typeof EvalCase>;

/** The agent a suite pins, by version (`GET /agents`): a run against another version is refused. */
const Version = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be a version as `GET /agents` lists it');

export const EvalSuite = z
  .object({
    name: text.max(200),
    description: z.string().optional(),
    agent: z.string().min(1).optional(),
    workflow: z.string().min(1).optional(),
    mode: z.enum(['single', 'multi']).optional(),
    /** The version of the agent (or workflow) the cases must run against. */
    agentVersion: Version.optional(),
    /** The most model calls of each agent in every case's run. */
    maxIterations: z.number().int().min(1).max(200).optional(),
    cases: z.array(EvalCase).min(1, 'name at least one case'),
  })
  .strict();
export type EvalSuite = z.infer<typeof EvalSuite>;

/** One bad field of a refused suite: its path (`cases.2.expect.0.pattern`) and what is wrong. */
export interface SuiteIssue {
  path: string;
  message: string;
}

/** A grader's verdict on a `judge` check. */
export const JudgeVerdict = z.object({ pass: z.boolean(), reason: z.string() });
export type JudgeVerdict = z.infer<typeof JudgeVerdict>;

export const Tokens = z.object({ input: z.number().int().nonnegative(), output: z.number().int().nonnegative() });
export type Tokens = z.infer<typeof Tokens>;

/**
 * What a case's run was seen to do, read from the API once it ended: the checks are judged on
 * this alone.
 */
export const ObservedRun = z.object({
  runId: z.string(),
  status: z.enum(['succeeded', 'failed', 'cancelled']),
  /** The final answer's text; empty when the run gave none. */
  answer: z.string(),
  /** The structured answer, when the run had an output schema. */
  output: z.record(z.string(), z.unknown()).optional(),
  /** Every tool call of the run's agents, in order. */
  toolCalls: z.array(z.object({ name: z.string(), input: z.unknown().optional() })),
  /** The workspace's files at the end, with the text of those a check reads. */
  files: z.array(z.object({ path: z.string(), text: z.string().optional() })),
  costUsd: z.number().nonnegative(),
  tokens: Tokens,
  /** Model calls of all the run's agents together. */
  iterations: z.number().int().nonnegative(),
  durationMs: z.number().nonnegative(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
export type ObservedRun = z.infer<typeof ObservedRun>;

export const CheckResult = z.object({
  /** The check as one line (`contains "42"`): with its place in the case, what compare matches on. */
  label: z.string(),
  type: z.string(),
  pass: z.boolean(),
  reason: z.string(),
});
export type CheckResult = z.infer<typeof CheckResult>;

/** `error`: the case could not be judged (refused, timed out, failed for a reason not the agent's), never a pass. */
export const CaseStatus = z.enum(['pass', 'fail', 'error']);
export type CaseStatus = z.infer<typeof CaseStatus>;

export const CaseResult = z.object({
  id: z.string(),
  goal: z.string(),
  status: CaseStatus,
  runId: z.string().optional(),
  checks: z.array(CheckResult),
  /** Why the case is an error, or why its run failed. */
  error: z.string().optional(),
  costUsd: z.number().nonnegative(),
  tokens: Tokens,
  iterations: z.number().int().nonnegative(),
  durationMs: z.number().nonnegative(),
});
export type CaseResult = z.infer<typeof CaseResult>;

export const ReportSummary = z.object({
  total: z.number().int(),
  passed: z.number().int(),
  failed: z.number().int(),
  errored: z.number().int(),
  costUsd: z.number(),
  tokens: Tokens,
  durationMs: z.number(),
});
export type ReportSummary = z.infer<typeof ReportSummary>;

/** The JSON report `stepwise eval --out` writes and `--compare` reads. */
export const EvalReport = z.object({
  suite: z.string(),
  /** What the cases ran: `agent assistant@3f9c…`, `workflow plan-and-build`, … */
  target: z.string(),
  startedAt: z.string(),
  finishedAt: z.string(),
  cases: z.array(CaseResult),
  summary: ReportSummary,
});
export type EvalReport = z.infer<typeof EvalReport>;

/** A change for the worse between two reports of a suite. */
export interface Regression {
  caseId: string;
  /** `case`: it passed and now fails or errors (or is gone); `check`: one of its checks passed and now fails. */
  kind: 'case' | 'check';
  check?: string;
  before: string;
  after: string;
}

/** A cost or iteration count that grew beyond the threshold: flagged, but not a regression. */
export interface Increase {
  caseId: string;
  metric: 'costUsd' | 'iterations';
  before: number;
  after: number;
}

export interface Comparison {
  regressions: Regression[];
  /** Cases that failed or errored before and pass now. */
  fixed: string[];
  increases: Increase[];
}

/** When a cost or an iteration count counts as grown: above `before × (1 + ratio)`, and by more than `floor`. */
export interface IncreaseThresholds {
  costRatio: number;
  costFloorUsd: number;
  iterationsRatio: number;
  iterationsFloor: number;
}

/** What a deployed eval is doing: running its cases, done (its report written), or stopped by a fault of its own. */
export const EvalStatus = z.enum(['running', 'succeeded', 'failed']);
export type EvalStatus = z.infer<typeof EvalStatus>;

/** A deployed eval (`POST /evals`), kept per owner: another caller's eval is not found. */
export interface EvalRecord {
  evalId: string;
  name: string;
  owner: { principal: string; tenant?: string | undefined };
  status: EvalStatus;
  cases: number;
  concurrency: number;
  createdAt: string;
  updatedAt: string;
  /** The report's totals, once it is written (the report itself is kept beside the cases). */
  summary?: ReportSummary;
  /** Why the eval failed. */
  error?: string;
}

/** Deployed evals' records, keyed by owner (`eval#<ownerKey>`). */
export interface EvalStore {
  /** Records a new eval; `false` when one of that id exists already. */
  create(record: EvalRecord): Promise<boolean>;
  get(owner: EvalRecord['owner'], evalId: string): Promise<EvalRecord | undefined>;
  /** The owner's evals, newest first. */
  list(owner: EvalRecord['owner'], limit: number): Promise<EvalRecord[]>;
  /** Ends a running eval: its status, with the report's totals or the reason it failed. */
  finish(owner: EvalRecord['owner'], evalId: string, outcome: { status: 'succeeded' | 'failed'; summary?: ReportSummary; error?: string }, now: string): Promise<void>;
}

/** The JSON documents of deployed evals (`evals/<evalId>/…` in the bucket): the suite, the map's items, each case's result, the report. */
export interface EvalObjects {
  put(key: string, value: unknown): Promise<void>;
  /** The document, or `undefined` when there is none. */
  get(key: string): Promise<unknown>;
}

/** What the evals state machine is started with: ids, the owner and the concurrency only (invariant 1). */
export interface EvalExecutionInput {
  evalId: string;
  owner: EvalRecord['owner'];
  /** The key of the items the Distributed Map reads (`evals/<evalId>/cases.json`). */
  itemsKey: string;
  concurrency: number;
}

/** Starts an eval's execution, named after the eval: starting it twice starts it once. */
export interface EvalStarter {
  start(input: EvalExecutionInput): Promise<void>;
}

/** One item of the Distributed Map: a case by its place in the suite. */
export interface EvalItem {
  index: number;
  id: string;
}
