/**
 * One eval case as a real run through the HTTP API (docs/evals.md): started with the suite's
 * agent, workflow or mode, its files seeded and its version pinned; followed to its end; then
 * read back (answer, tool calls, files, spend) into the observed record the checks judge, and
 * its `judge` checks graded by runs of the same deployment. Anything that keeps a case from being
 * judged is its error, never a pass.
 */
import type { ApiClient } from '../../functions/api/client.js';
import type { RunView } from '../../functions/api/schemas.js';
import type { CaseOutcome } from '../../functions/core/evals/checks.js';
import { type EvalCase, type EvalSuite, JudgeVerdict, type ObservedRun } from '../../functions/core/evals/types.js';
import { caseBody, judgeBody } from '../../functions/core/evals/run-body.js';
import { ApiError } from './client.js';

export { caseBody, judgePrompt, verdictSchema } from '../../functions/core/evals/run-body.js';

export interface CaseOptions {
  /** How long a run (the case's, or a judge's) may take before the case is an error and the run is cancelled. */
  timeoutMs: number;
  /** The first wait between polls of a running run; it grows by half up to 1 s. @default 100 */
  pollMs?: number;
}

/** Why a case could not be judged. */
class CaseError extends Error {
  constructor(
    message: string,
    readonly runId?: string,
  ) {
    super(message);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function describeError(error: unknown): string {
  if (error instanceof ApiError) return `${error.status ? `HTTP ${error.status} ` : ''}${error.code}: ${error.detail}`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Polls a run until it ends. A run that waits for a reviewer, or outlives the timeout, is
 * cancelled (best effort) and is the case's error: an eval has no one to approve its calls.
 */
export async function runToEnd(api: ApiClient, runId: string, options: CaseOptions): Promise<RunView> {
  const deadline = Date.now() + options.timeoutMs;
  let wait = options.pollMs ?? 100;
  for (;;) {
    const run = await api.getRun(runId);
    if (run.status !== 'running') return run;
    const stop = run.waitingFor.length
      ? `the run waits for a reviewer to decide ${run.waitingFor.map((w) => w.name).join(', ')}; an eval has no reviewer`
      : Date.now() > deadline
        ? `the run did not end within ${Math.round(options.timeoutMs / 1000)} s`
        : undefined;
    if (stop) {
      await api.cancelRun(runId).catch(() => undefined);
      throw new CaseError(stop, runId);
    }
    await sleep(wait);
    wait = Math.min(wait * 1.5, 1000);
  }
}

/** Every tool call of a run's agents, in order, from its transcript. */
async function toolCallsOf(api: ApiClient, runId: string): Promise<ObservedRun['toolCalls']> {
  const calls: ObservedRun['toolCalls'] = [];
  let cursor: string | undefined;
  do {
    const page = await api.messages(runId, cursor ? { cursor } : {});
    for (const message of page.items) for (const block of message.content) if (block.type === 'tool_use') calls.push({ name: String(block.name), input: block.input });
    cursor = page.nextCursor;
  } while (cursor);
  return calls;
}

/** The workspace's files, with the text of those `fileContains` checks read (a file that is not UTF-8 text has none). */
async function filesOf(api: ApiClient, runId: string, wanted: ReadonlySet<string>): Promise<ObservedRun['files']> {
  const { items } = await api.files(runId);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  return Promise.all(
    items.map(async ({ path }) => {
      if (!wanted.has(path)) return { path };
      try {
        return { path, text: decoder.decode(await (await api.file(runId, path)).arrayBuffer()) };
      } catch {
        return { path };
      }
    }),
  );
}

/** A run as the checks see it. */
export async function observe(api: ApiClient, run: RunView, kase: EvalCase, durationMs: number): Promise<ObservedRun> {
  const wanted = new Set(kase.expect.flatMap((c) => (c.type === 'fileContains' ? [c.path.split('/').filter((s) => s && s !== '.').join('/')] : [])));
  const [toolCalls, files] = await Promise.all([toolCallsOf(api, run.runId), filesOf(api, run.runId, wanted)]);
  const u = run.usage;
  return {
    runId: run.runId,
    status: run.status === 'running' ? 'failed' : run.status,
    answer: run.result?.response ?? '',
    ...(run.result?.output ? { output: run.result.output } : {}),
    toolCalls,
    files,
    costUsd: run.estimatedCostUsd ?? 0,
    tokens: { input: u.inputTokens + u.cacheReadInputTokens + u.cacheCreationInputTokens, output: u.outputTokens },
    iterations: Object.values(run.iterations).reduce<number>((sum, n) => sum + (n ?? 0), 0),
    durationMs,
    ...(run.error ? { error: { code: run.error.code, message: run.error.message } } : {}),
  };
}

/**
 * Grades an answer with a run of the deployment's own model: a single-mode run whose structured
 * output is the verdict. Locally that is the scripted or offline model, deployed Claude.
 */
export async function judge(api: ApiClient, rubric: string, goal: string, answer: string, options: CaseOptions): Promise<JudgeVerdict> {
  const started = await api.startRun(judgeBody(rubric, goal, answer));
  const run = await runToEnd(api, started.runId, options);
  const verdict = JudgeVerdict.safeParse(run.result?.output);
  if (run.status !== 'succeeded' || !verdict.success) {
    throw new Error(`judge run ${run.runId} ${run.status}${run.error ? ` (${run.error.code}: ${run.error.message})` : ''} without a verdict`);
  }
  return verdict.data;
}

/** Runs one case to the outcome its checks are judged on, with the run it saw (for the report's target). */
export async function runCase(api: ApiClient, suite: EvalSuite, kase: EvalCase, options: CaseOptions): Promise<{ outcome: CaseOutcome; run?: RunView }> {
  const began = Date.now();
  let runId: string | undefined;
  try {
    runId = (await api.startRun(caseBody(suite, kase))).runId;
    const run = await runToEnd(api, runId, options);
    const observed = await observe(api, run, kase, Date.now() - began);
    const verdicts = new Map<number, JudgeVerdict>();
    let judgeError: string | undefined;
    if (observed.status === 'succeeded') {
      for (const [i, check] of kase.expect.entries()) {
        if (check.type !== 'judge') continue;
        try {
          verdicts.set(i, await judge(api, check.rubric, kase.goal, observed.answer, options));
        } catch (error) {
          judgeError ??= describeError(error);
        }
      }
    }
    return { outcome: { observed, verdicts, ...(judgeError ? { judgeError } : {}) }, run };
  } catch (error) {
    const at = error instanceof CaseError ? error.runId : runId;
    return { outcome: { error: describeError(error), ...(at ? { runId: at } : {}), durationMs: Date.now() - began } };
  }
}
