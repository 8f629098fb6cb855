/**
 * The steps of a deployed eval's case (docs/evals.md, "Deployed"), each a call of the eval-step
 * function from the evals state machine: start the case's run through intake's core (as its
 * owner, with the same validation, quotas and files as `POST /runs`) without starting it, so the
 * state machine runs the orchestrator as a nested execution; start its judges the same way; judge
 * it and keep its result; record a case that could not be judged as an error; write the report.
 */
import { conversationIdOf } from '../conversation/conversation.js';
import { createRun } from '../intake/create.js';
import { createRunBody } from '../intake/request.js';
import type { IntakeDeps, OrchestratorInput, RunStarter } from '../intake/types.js';
import { placesOf, type Run, type RunStore } from '../runs/types.js';
import type { ConversationStore } from '../conversation/types.js';
import type { Workspace } from '../workspace/types.js';
import { type CaseOutcome, evaluateCase } from './checks.js';
import { caseRunId, evalKeys, judgeRunId } from './deployed.js';
import { buildReport } from './report.js';
import { caseBody, judgeBody } from './run-body.js';
import { type CaseResult, type EvalCase, type EvalObjects, type EvalRecord, type EvalStore, EvalSuite, JudgeVerdict, type ObservedRun, type ReportSummary } from './types.js';

export interface CaseStepDeps {
  objects: EvalObjects;
  evals: EvalStore;
  runs: RunStore;
  conversations: Pick<ConversationStore, 'load'>;
  workspaceFor(runId: string): Pick<Workspace, 'list' | 'read'>;
  /** Intake as `POST /runs` has it; its starter is never called here (the state machine starts the orchestrator). */
  intake: IntakeDeps;
  clock?: () => Date;
}

/** Which case of which eval, for whom. */
export interface CaseRef {
  evalId: string;
  index: number;
  owner: EvalRecord['owner'];
}

/** A run created for the state machine to start: its id and the orchestrator's input. */
export interface PreparedRun {
  runId: string;
  orchestrator: OrchestratorInput;
}

/** The case's run was made before and is no longer waiting to start (a step repeated after its run began). */
export class CaseRunStarted extends Error {
  override readonly name = 'CaseRunStarted';
}

async function suiteOf(evalId: string, deps: Pick<CaseStepDeps, 'objects'>): Promise<EvalSuite> {
  return EvalSuite.parse(await deps.objects.get(evalKeys(evalId).suite));
}

function caseAt(suite: EvalSuite, index: number): EvalCase {
  const kase = suite.cases[index];
  if (!kase) throw new Error(`The suite has no case ${index}.`);
  return kase;
}

/**
 * Creates a run as `POST /runs` would, as the eval's owner, recording the eval, and returns the
 * orchestrator's input instead of starting it. The run id is derived from the eval, so a repeated
 * step finds the run it made; one that has begun already is `CaseRunStarted`.
 */
async function prepareRun(body: unknown, runId: string, ref: CaseRef, deps: CaseStepDeps): Promise<PreparedRun> {
  let captured: OrchestratorInput | undefined;
  const starter: RunStarter = {
    start: async (input) => void (captured = input),
    stop: () => Promise.reject(new Error('An eval step stops no run.')),
    announceCancelled: () => Promise.reject(new Error('An eval step cancels no run.')),
  };
  const runs: RunStore = Object.create(deps.runs) as RunStore;
  runs.create = (run) => deps.runs.create({ ...run, evalId: ref.evalId });
  const intake = { ...deps.intake, runs, starter };
  const parsed = createRunBody(intake).parse(body);
  const started = await createRun(parsed, intake, { caller: { principal: ref.owner.principal, ...(ref.owner.tenant ? { tenant: ref.owner.tenant } : {}), scopes: [] }, runId });
  if (!captured) throw new CaseRunStarted(`Run ${runId} is ${started.status} (${started.phase}): it began before this step.`);
  return { runId, orchestrator: captured };
}

/** Step 1: the case's run, created and ready for the orchestrator. */
export async function startCase(ref: CaseRef, deps: CaseStepDeps): Promise<PreparedRun> {
  const suite = await suiteOf(ref.evalId, deps);
  return prepareRun(caseBody(suite, caseAt(suite, ref.index)), caseRunId(ref.evalId, ref.index), ref, deps);
}

/** Step 2: a judge run for each `judge` check of a case whose run succeeded (none otherwise). */
export async function startJudges(ref: CaseRef, deps: CaseStepDeps): Promise<{ judges: PreparedRun[] }> {
  const suite = await suiteOf(ref.evalId, deps);
  const kase = caseAt(suite, ref.index);
  const run = await deps.runs.get(caseRunId(ref.evalId, ref.index));
  if (run?.status !== 'succeeded') return { judges: [] };
  const judges: PreparedRun[] = [];
  for (const [i, check] of kase.expect.entries()) {
    if (check.type !== 'judge') continue;
    judges.push(await prepareRun(judgeBody(check.rubric, kase.goal, run.result?.response ?? ''), judgeRunId(ref.evalId, ref.index, i), ref, deps));
  }
  return { judges };
}

/** Every tool call of the run's agents, in order, from their conversations. */
async function toolCallsOf(run: Run, deps: Pick<CaseStepDeps, 'conversations'>): Promise<ObservedRun['toolCalls']> {
  const calls: ObservedRun['toolCalls'] = [];
  for (const place of placesOf(run)) {
    const { messages } = await deps.conversations.load(conversationIdOf(run.runId, place, run.sessionId, run.owner));
    for (const message of messages) {
      if (message.meta.runId !== run.runId) continue;
      for (const block of message.content) if (block.type === 'tool_use') calls.push({ name: String(block.name), input: block.input });
    }
  }
  return calls;
}

/** The most workspace files a case's observation lists. */
const maxListedFiles = 1000;

/** A run that ended, as the checks see it: its answer, tool calls, files (with the text of those a check reads) and spend. */
export async function observeRun(run: Run & { status: ObservedRun['status'] }, kase: EvalCase, deps: Pick<CaseStepDeps, 'conversations' | 'workspaceFor'>): Promise<ObservedRun> {
  const wanted = new Set(kase.expect.flatMap((c) => (c.type === 'fileContains' ? [c.path.split('/').filter((s) => s && s !== '.').join('/')] : [])));
  const workspace = deps.workspaceFor(run.runId);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const { entries } = await workspace.list('', maxListedFiles);
  const files = await Promise.all(
    entries.map(async ({ path }) => {
      if (!wanted.has(path)) return { path };
      try {
        const bytes = await workspace.read(path);
        return bytes ? { path, text: decoder.decode(bytes) } : { path };
      } catch {
        return { path };
      }
    }),
  );
  const u = run.usage;
  return {
    runId: run.runId,
    status: run.status,
    answer: run.result?.response ?? '',
    ...(run.result?.output ? { output: run.result.output } : {}),
    toolCalls: await toolCallsOf(run, deps),
    files,
    costUsd: run.estimatedCostUsd ?? 0,
    tokens: { input: u.inputTokens + u.cacheReadInputTokens + u.cacheCreationInputTokens, output: u.outputTokens },
    iterations: Object.values(run.iterations).reduce<number>((sum, n) => sum + (n ?? 0), 0),
    durationMs: Math.max(0, Date.parse(run.updatedAt) - Date.parse(run.createdAt)),
    ...(run.error ? { error: { code: run.error.code, message: run.error.message } } : {}),
  };
}

const ended = (run: Run): run is Run & { status: ObservedRun['status'] } => run.status !== 'running';

/** Step 3: the case judged on its run and its judges' verdicts, its result kept beside the eval. */
export async function finishCase(ref: CaseRef, deps: CaseStepDeps): Promise<{ id: string; status: CaseResult['status'] }> {
  const suite = await suiteOf(ref.evalId, deps);
  const kase = caseAt(suite, ref.index);
  const runId = caseRunId(ref.evalId, ref.index);
  const run = await deps.runs.get(runId);
  let outcome: CaseOutcome;
  if (!run) outcome = { error: 'the case has no run', runId };
  else if (!ended(run)) outcome = { error: `the run was still ${run.status} when the case was judged`, runId };
  else {
    const observed = await observeRun(run, kase, deps);
    const verdicts = new Map<number, JudgeVerdict>();
    let judgeError: string | undefined;
    if (observed.status === 'succeeded') {
      for (const [i, check] of kase.expect.entries()) {
        if (check.type !== 'judge') continue;
        const judge = await deps.runs.get(judgeRunId(ref.evalId, ref.index, i));
        const verdict = JudgeVerdict.safeParse(judge?.result?.output);
        if (judge?.status === 'succeeded' && verdict.success) verdicts.set(i, verdict.data);
        else judgeError ??= `judge run ${judgeRunId(ref.evalId, ref.index, i)} ${judge?.status ?? 'missing'}${judge?.error ? ` (${judge.error.code}: ${judge.error.message})` : ''} without a verdict`;
      }
    }
    outcome = { observed, verdicts, ...(judgeError ? { judgeError } : {}) };
  }
  const result = evaluateCase(kase, outcome);
  await deps.objects.put(evalKeys(ref.evalId).result(ref.index), result);
  return { id: result.id, status: result.status };
}

/** What Step Functions' `Catch` hands over: the error's name and its cause. */
export interface StepFailure {
  Error?: string;
  Cause?: string;
}

/** The readable part of a failure: Lambda's JSON cause gives its `errorMessage`. */
export function failureText(failure: StepFailure | undefined): string {
  const cause = failure?.Cause ?? '';
  let message = cause;
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: unknown; Cause?: unknown };
    if (typeof parsed.errorMessage === 'string') message = parsed.errorMessage;
    else if (typeof parsed.Cause === 'string') message = parsed.Cause;
  } catch {
    // A cause that is not JSON is the message itself.
  }
  return `${failure?.Error ?? 'Error'}${message ? `: ${message}` : ''}`;
}

/** A case a step could not take to its judgement: an error, never a pass. */
export async function recordCaseError(ref: CaseRef & { failure?: StepFailure }, deps: Pick<CaseStepDeps, 'objects'>): Promise<{ id: string; status: 'error' }> {
  const suite = await suiteOf(ref.evalId, deps);
  const kase = caseAt(suite, ref.index);
  const result = evaluateCase(kase, { error: failureText(ref.failure), runId: caseRunId(ref.evalId, ref.index) });
  await deps.objects.put(evalKeys(ref.evalId).result(ref.index), result);
  return { id: kase.id, status: 'error' };
}

/** What the report names as the cases' target: the agent or workflow the first case's run recorded (with its version), else the suite's. */
function targetOf(suite: EvalSuite, run: Run | undefined): string {
  if (run?.agent) return `agent ${run.agent.name}@${run.agent.version}`;
  if (run?.workflow) return `workflow ${run.workflow.name}@${run.workflow.version}`;
  if (suite.agent) return `agent ${suite.agent}`;
  if (suite.workflow) return `workflow ${suite.workflow}`;
  return suite.mode === 'single' ? 'agent assistant' : 'workflow plan-and-build';
}

/**
 * The last step: every case's result (a case without one is an error), the report written beside
 * them, the eval marked succeeded with the report's totals.
 */
export async function writeReport(ref: Omit<CaseRef, 'index'>, deps: Pick<CaseStepDeps, 'objects' | 'evals' | 'runs' | 'clock'>): Promise<{ status: 'succeeded'; summary: ReportSummary }> {
  const suite = await suiteOf(ref.evalId, deps);
  const keys = evalKeys(ref.evalId);
  const cases = await Promise.all(
    suite.cases.map(async (kase, index) => {
      const stored = (await deps.objects.get(keys.result(index))) as CaseResult | undefined;
      return stored ?? evaluateCase(kase, { error: 'no result was recorded for the case' });
    }),
  );
  const record = await deps.evals.get(ref.owner, ref.evalId);
  const finishedAt = (deps.clock ?? (() => new Date()))();
  const report = buildReport({
    suite: suite.name,
    target: targetOf(suite, await deps.runs.get(caseRunId(ref.evalId, 0))),
    startedAt: record ? new Date(record.createdAt) : finishedAt,
    finishedAt,
    cases,
  });
  await deps.objects.put(keys.report, report);
  await deps.evals.finish(ref.owner, ref.evalId, { status: 'succeeded', summary: report.summary }, finishedAt.toISOString());
  return { status: 'succeeded', summary: report.summary };
}

/** The eval itself failed (its map or report could not be done): recorded with the reason. */
export async function failEval(ref: Omit<CaseRef, 'index'> & { failure?: StepFailure }, deps: Pick<CaseStepDeps, 'evals' | 'clock'>): Promise<void> {
  const now = (deps.clock ?? (() => new Date()))();
  await deps.evals.finish(ref.owner, ref.evalId, { status: 'failed', error: failureText(ref.failure) }, now.toISOString());
}
