/**
 * Intake: one code path for the HTTP API and for EventBridge events. Validate, create the run
 * record, start the orchestrator; bad input is refused whole (invariant 10, docs/ARCHITECTURE.md).
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { approvalPolicy, gatedTools } from './approvals.js';
import { Budget, BudgetExceeded, type BudgetSettings, type SpendStore, dailyBudgetSpent, dayOf, runBudget } from './budgets.js';
import { type Caller, Forbidden, Owner, TooManyRuns, callerFromEvent, ownerKey, owns } from './callers.js';
import { conversationIdOf } from './conversation.js';
import { StepwiseError, messageOf } from './errors.js';
import { zeroUsage } from './messages.js';
import { OutputRequest } from './output.js';
import type { ForkedFrom, Run, RunStore } from './runs.js';
import { type ExternalToolNames, noExternalTools } from './tools/external.js';

export const maxGoalChars = 100_000;
export const defaultMaxIterations = 25;

const modelId = z.string().min(1).max(200);

/** `model`, limited to the models a deployment allows when it names them. */
function modelField(allowed?: readonly string[]) {
  if (!allowed) return modelId.optional();
  return modelId
    .refine((model) => allowed.includes(model), { message: `must be one of the models this deployment allows: ${allowed.join(', ')}` })
    .optional();
}

/** What a deployment lets a run request name, beyond the fields' own rules: its models and its external tools. */
export type RunRequestRules = Pick<IntakeDeps, 'allowedModels' | 'externalToolNames'>;

/** The fields of a run request, as `POST /runs` and the fork route validate them. */
export function runRequestFields({ allowedModels, externalToolNames }: RunRequestRules = {}) {
  return {
    goal: z.string().trim().min(1, 'must not be empty').max(maxGoalChars, `must be at most ${maxGoalChars} characters`),
    mode: z.enum(['single', 'multi']).default('multi'),
    sessionId: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_" or "-"')
      .optional(),
    maxIterations: z.number().int().min(1).max(200).default(defaultMaxIterations),
    model: modelField(allowedModels),
    // A policy may name the deployment's tools only: a name it does not have would leave calls ungated.
    approvals: approvalPolicy(externalToolNames ?? noExternalTools).optional(),
    budget: Budget.optional(),
    output: OutputRequest.optional(),
  };
}

const sessionsAreSingle = {
  check: (body: { sessionId?: string | undefined; mode: 'single' | 'multi' }) => !(body.sessionId && body.mode === 'multi'),
  params: { path: ['sessionId'], message: 'sessions continue single-mode conversations; use mode "single" with a sessionId' },
};

/** The body of `POST /runs`, with the deployment's list of models applied when it has one, and its tools. */
export function createRunBody(rules: RunRequestRules = {}) {
  return z.object(runRequestFields(rules)).strict().refine(sessionsAreSingle.check, sessionsAreSingle.params);
}

/** The body of `POST /runs`, any model allowed, the built-in tools only (the body's type). */
export const CreateRunBody = createRunBody();
export type CreateRunBody = z.infer<typeof CreateRunBody>;

/** Executions are named `<runId>-<agent>-<iteration>`; Step Functions allows 80 characters. */
export const ClientRunId = z.string().regex(/^[A-Za-z0-9_-]{1,56}$/, 'must be 1-56 letters, digits, "_" or "-"');

/** The detail of a `Stepwise Run Requested` event: the `POST /runs` body plus an optional client run id. */
export function runRequestedDetail(rules: RunRequestRules = {}) {
  return z
    .object({
      ...runRequestFields(rules),
      runId: ClientRunId.optional(),
      /** The caller a trusted source starts the run for; it then owns the run. */
      onBehalfOf: Owner.strict().optional(),
    })
    .strict()
    .refine(sessionsAreSingle.check, sessionsAreSingle.params);
}

export const RunRequestedDetail = runRequestedDetail();
export type RunRequestedDetail = z.infer<typeof RunRequestedDetail>;

export const runRequestedDetailType = 'Stepwise Run Requested';

/** What the orchestrator is started with: ids and limits only. */
export interface OrchestratorInput {
  runId: string;
  mode: Run['mode'];
  conversationId: string;
  maxIterations: number;
  /** The model the run asked for; empty for the deployment's default. */
  model: string;
}

/** Starts and stops a run's orchestrator; starting the same run twice starts it once. */
export interface RunStarter {
  start(input: OrchestratorInput): Promise<void>;
  /** Stops the run's executions, nested ones included. */
  stop(runId: string, reason: string): Promise<void>;
  /**
   * Has the orchestrator announce that the run was cancelled (`Stepwise Run Cancelled`), once
   * however often it is asked: a stopped execution announces nothing itself.
   */
  announceCancelled(runId: string): Promise<void>;
}

/**
 * Cancels a running run: marks it cancelled, stops its executions, then announces it. `false`
 * when it was not running.
 */
export async function cancelRun(runId: string, deps: Pick<IntakeDeps, 'runs' | 'starter'>): Promise<boolean> {
  // Repeatable: a cancel whose stop or announcement failed can be sent again and completes then.
  if (!(await deps.runs.cancel(runId)) && (await deps.runs.get(runId))?.status !== 'cancelled') return false;
  await deps.starter.stop(runId, 'Cancelled on request.');
  await deps.starter.announceCancelled(runId);
  return true;
}

/** Remembers which run an `Idempotency-Key` started, and with which body, for a while. */
export interface IdempotencyStore {
  /** The run an unexpired key started and the hash of its body. */
  get(key: string, now: Date): Promise<{ runId: string; bodyHash: string } | undefined>;
  /** Records the key unless an unexpired record exists; returns the record that stands. */
  claim(key: string, record: { runId: string; bodyHash: string }, now: Date): Promise<{ runId: string; bodyHash: string }>;
}

/** One running run per session. */
export interface SessionLocks {
  /**
   * Makes `runId` the session's run unless another run holds it and still runs; returns the run
   * that holds the session afterwards. `isRunning` is `undefined` for a run with no record yet
   * (its intake is still under way): the lock then stands for a grace period.
   */
  acquire(sessionId: string, runId: string, isRunning: (runId: string) => Promise<boolean | undefined>): Promise<string>;
  /** Frees the session if `runId` still holds it; nothing otherwise (another run took it over). */
  release(sessionId: string, runId: string): Promise<void>;
}

/** The lock of an owner's session: session ids are per owner, so another caller's is another lock. */
export function sessionLockId(owner: Owner, sessionId: string): string {
  return `${ownerKey(owner)}/${sessionId}`;
}

export interface IntakeDeps {
  runs: RunStore;
  starter: RunStarter;
  newId: () => string;
  clock?: () => Date;
  idempotency?: IdempotencyStore;
  sessions?: SessionLocks;
  /** Tools that need a reviewer's approval in every run of this deployment; a run may add more. */
  approvalTools?: readonly string[];
  /** The deployment's MCP servers and Lambda tools, which approval policies may name besides the built-in tools; none when absent. */
  externalToolNames?: ExternalToolNames;
  /** The models a run may ask for; any when absent. Checked where bodies are validated. */
  allowedModels?: readonly string[];
  /** The most runs one principal may have running at once; no limit when absent. */
  maxRunningRuns?: number;
  /** Event sources trusted to start runs on behalf of another caller (`onBehalfOf`). */
  trustedSources?: readonly string[];
  /** The default budget of a run and the daily limit per caller; none when absent. */
  budgets?: BudgetSettings;
  /** What each caller's runs cost per day, for the daily limit (needed when `budgets.dailyMaxUsd` is set). */
  spend?: Pick<SpendStore, 'spentOn'>;
  /**
   * Told of each run this intake created, once per run: a repeated request (idempotency key,
   * client run id, redelivered event) creates nothing and is not told (the `RunsStarted` metric).
   */
  onCreated?: (run: Run) => void;
}

/** The same `Idempotency-Key` was sent with another body. */
export class IdempotencyConflict extends StepwiseError {
  override readonly name = 'IdempotencyConflict';
}

/** Another run of the session is still running. */
export class SessionBusy extends StepwiseError {
  override readonly name = 'SessionBusy';
}

/** The hash of a validated body: key order (at any depth) and defaults do not change it; nested values (a budget, a schema) do. */
export function bodyHash(body: CreateRunBody): string {
  return createHash('sha256').update(JSON.stringify(sortedKeys(body))).digest('hex');
}

/** A JSON value with the keys of every object in order, so equal values serialize alike. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

export interface CreateRunOptions {
  /** Who starts the run: its owner. */
  caller: Caller;
  /** A client-chosen run id (events): starting it twice starts it once. */
  runId?: string;
  idempotencyKey?: string;
  /** The run is a fork of another (`core/fork.ts`). */
  fork?: RunFork;
}

/** What makes a run a fork: where it comes from, and the copy made before its record exists. */
export interface RunFork {
  from: ForkedFrom;
  /** Stands for the request in the idempotency check: the fork request, not the body derived from it. */
  requestHash: string;
  /**
   * Copies the source's conversation and workspace to the new run. Repeatable (a repeated request
   * completes a copy a crash cut short); never run once the fork's record exists.
   */
  copy(runId: string): Promise<void>;
}

/** A client-chosen run id that another caller's run already has. */
export class RunIdTaken extends StepwiseError {
  override readonly name = 'RunIdTaken';
}

/**
 * Creates and starts a run from a validated body; returns what `POST /runs` answers. Repeats
 * (the same idempotency key and body, or the same client run id) return the first run and start
 * nothing new. A session that another running run holds is refused before anything is written.
 */
export async function createRun(
  body: CreateRunBody,
  deps: IntakeDeps,
  options: CreateRunOptions,
): Promise<Pick<Run, 'runId' | 'status' | 'phase'>> {
  const clock = deps.clock ?? (() => new Date());
  const hash = options.fork?.requestHash ?? bodyHash(body);
  const owner = Owner.parse({ principal: options.caller.principal, tenant: options.caller.tenant });
  // Idempotency keys and sessions are per owner: another caller's key or session id names another record.
  const idempotencyKey = options.idempotencyKey && `${ownerKey(owner)}:${options.idempotencyKey}`;
  let runId = options.runId ?? deps.newId();
  // Only an id the caller gave, or an earlier request's, can name a run already made: one just
  // generated names none, and is not looked for.
  let named = options.runId !== undefined;
  if (idempotencyKey && deps.idempotency) {
    const earlier = await deps.idempotency.get(idempotencyKey, clock());
    if (earlier && earlier.bodyHash !== hash) {
      throw new IdempotencyConflict('This Idempotency-Key was used with a different request body.');
    }
    if (earlier) {
      runId = earlier.runId;
      named = true;
    }
  }
  const start = () =>
    deps.starter.start({
      runId,
      mode: body.mode,
      conversationId: conversationIdOf(runId, 'single', body.sessionId, owner),
      maxIterations: body.maxIterations,
      model: body.model ?? '',
    });
  const existing = named ? await deps.runs.get(runId) : undefined;
  // A run id another caller chose first is not this caller's to repeat (nor to learn about from the answer).
  if (existing && !owns(owner, existing.owner)) throw new RunIdTaken(`The run id ${runId} is taken; choose another.`);
  if (existing) {
    // A repeat. If the first request stopped between creating and starting, start it now.
    if (existing.status === 'running' && existing.phase === 'idle') await start();
    return { runId, status: existing.status, phase: existing.phase };
  }

  // Stryker disable next-line ConditionalExpression: a count is never >= undefined, so the guard only saves the count
  if (deps.maxRunningRuns !== undefined && (await deps.runs.countRunning(owner)) >= deps.maxRunningRuns) {
    throw new TooManyRuns(`You have ${deps.maxRunningRuns} runs running, the most this deployment allows; wait for one to end or cancel one.`);
  }
  await refuseWhenDailySpent(owner, clock(), deps);
  if (idempotencyKey && deps.idempotency) {
    // Two first requests racing: the claim that stands names the run both answer with.
    const claim = await deps.idempotency.claim(idempotencyKey, { runId, bodyHash: hash }, clock());
    if (claim.bodyHash !== hash) throw new IdempotencyConflict('This Idempotency-Key was used with a different request body.');
    runId = claim.runId;
  }
  // The session is locked for the run id that stands, before its record exists.
  if (body.sessionId && deps.sessions) {
    const isRunning = async (id: string) => {
      const holder = await deps.runs.get(id);
      return holder ? holder.status === 'running' : undefined;
    };
    const holder = await deps.sessions.acquire(sessionLockId(owner, body.sessionId), runId, isRunning);
    if (holder !== runId) throw new SessionBusy(`Session ${body.sessionId} is in use by run ${holder}, which is still running.`);
  }
  // A fork's history and files are in place before its record exists, so no step ever sees a partial copy.
  if (options.fork) await options.fork.copy(runId);
  const now = clock().toISOString();
  const gated = gatedTools(deps.approvalTools ?? [], body.approvals?.tools);
  const budget = runBudget(body.budget, deps.budgets);
  const run: Run = {
    runId,
    mode: body.mode,
    goal: body.goal,
    owner,
    ...(body.sessionId ? { sessionId: body.sessionId } : {}),
    ...(body.model ? { model: body.model } : {}),
    ...(gated.length || body.approvals?.rules?.length ? { approvals: { tools: gated, ...(body.approvals?.rules?.length ? { rules: body.approvals.rules } : {}) } } : {}),
    ...(options.fork ? { forkedFrom: options.fork.from } : {}),
    ...(budget ? { budget } : {}),
    ...(body.output ? { output: body.output } : {}),
    status: 'running',
    phase: 'idle',
    iterations: {},
    usage: zeroUsage,
    createdAt: now,
    updatedAt: now,
  };
  const created = await deps.runs.create(run);
  if (created) deps.onCreated?.(run);
  const stored = created ? run : await deps.runs.get(runId);
  if (!stored) throw new Error(`Run ${runId} could not be created.`);
  try {
    await start();
  } catch (error) {
    // A transient fault leaves the run waiting to start: a repeat of the request starts it.
    if (!(error instanceof StepwiseError && error.transient)) {
      await deps.runs.finish(runId, {
        status: 'failed',
        phase: 'failed',
        error: { code: 'StartFailed', message: `The run could not be started: ${messageOf(error)}` },
      });
    }
    throw error;
  }
  return { runId, status: stored.status, phase: stored.phase };
}

/** Refuses a new run once the caller's runs of today have spent its daily budget (429 `BudgetExceeded`). */
async function refuseWhenDailySpent(owner: Owner, now: Date, deps: Pick<IntakeDeps, 'budgets' | 'spend'>): Promise<void> {
  const limit = deps.budgets?.dailyMaxUsd;
  if (limit === undefined || !deps.spend) return;
  const day = dayOf(now);
  const spent = dailyBudgetSpent(await deps.spend.spentOn(owner, day), limit, day);
  if (spent) throw new BudgetExceeded(`${spent} Runs can start again tomorrow (UTC).`);
}

/** Where events that fail validation go, with the reason (invariant 10, docs/ARCHITECTURE.md). */
export interface DeadLetters {
  send(letter: { reason: string; issues: { path: string; message: string }[]; event: unknown }): Promise<void>;
}

export type IntakeOutcome = { accepted: true; runId: string } | { accepted: false; reason: string };

/**
 * Takes a `Stepwise Run Requested` event through the same validation and run creation as
 * `POST /runs`. An invalid event starts nothing and goes to the dead letters with the reason;
 * a client `runId` makes a redelivered event start its run once.
 *
 * What may pass (a transient fault, a busy session) throws, so that Lambda delivers the event
 * again; when its retries run out, the function's on-failure destination puts it in the same
 * dead-letter queue with the error. Anything else ends in the dead letters at once, with the
 * reason: an event that cannot start is never dropped.
 */
export async function intakeEvent(event: unknown, deps: IntakeDeps & { deadLetters: DeadLetters }): Promise<IntakeOutcome> {
  const envelope = z.object({ 'detail-type': z.literal(runRequestedDetailType), detail: z.unknown() }).safeParse(event);
  const detail = envelope.success ? runRequestedDetail(deps).safeParse(envelope.data.detail) : undefined;
  // Stryker disable next-line OptionalChaining: detail is parsed whenever the envelope was
  if (!envelope.success || !detail?.success) {
    // Stryker disable next-line OptionalChaining: detail is parsed whenever the envelope was
    const error = envelope.success ? detail?.error : envelope.error;
    // Stryker disable next-line OptionalChaining: one of the two parses failed, so error is set
    const issues = (error?.issues ?? []).map((i) => ({
      path: (envelope.success ? ['detail', ...i.path] : i.path).join('.') || '(event)',
      message: i.message,
    }));
    const reason = `The event is not a valid ${runRequestedDetailType} request.`;
    await deps.deadLetters.send({ reason, issues, event });
    return { accepted: false, reason };
  }
  const { runId, onBehalfOf, ...body } = detail.data;
  // The caller is the event's source in its account; a trusted source may name another owner.
  let caller: Caller;
  try {
    caller = callerFromEvent(eventOrigin(event), onBehalfOf, deps.trustedSources);
  } catch (error) {
    // Stryker disable next-line ConditionalExpression,BooleanLiteral: callerFromEvent throws nothing but Forbidden; the rethrow guards against that changing
    if (!(error instanceof Forbidden)) throw error;
    const reason = error.message;
    await deps.deadLetters.send({ reason, issues: [{ path: 'detail.onBehalfOf', message: reason }], event });
    return { accepted: false, reason };
  }
  // Without a client run id, the event's own id keeps a redelivery from starting a second run.
  const eventId = z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) }).safeParse(event);
  const fallback = eventId.success ? `evt-${eventId.data.id}` : undefined;
  const chosen = runId ?? fallback;
  try {
    const started = await createRun(body, deps, { caller, ...(chosen ? { runId: chosen } : {}) });
    return { accepted: true, runId: started.runId };
  } catch (error) {
    if (worthRetrying(error)) throw error;
    // Refusals and failures that no redelivery can change end in the dead letters, with the reason.
    const reason = error instanceof StepwiseError ? error.message : `The run could not be started: ${messageOf(error)}`;
    const path = error instanceof RunIdTaken ? 'detail.runId' : '(event)';
    await deps.deadLetters.send({ reason, issues: [{ path, message: reason }], event });
    return { accepted: false, reason };
  }
}

/**
 * Whether a redelivery of the event may succeed: a transient fault (a throttled start, a store
 * that did not answer) or a busy session, whose run may end before the last retry. Nothing was
 * written for either but a run waiting to start, which the redelivery starts.
 */
function worthRetrying(error: unknown): boolean {
  return (error instanceof StepwiseError && error.transient) || error instanceof SessionBusy;
}

/** Where an event came from: EventBridge always sets both; an event without them is from nowhere we know. */
function eventOrigin(event: unknown): { account: string; source: string } {
  const origin = z.object({ account: z.string().min(1).catch('unknown'), source: z.string().min(1).catch('unknown') }).parse(event);
  return origin;
}
