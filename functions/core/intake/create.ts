/**
 * Intake: one code path for the HTTP API and for EventBridge events. Validate, create the run
 * record, start the orchestrator; bad input is refused whole (invariant 10, docs/ARCHITECTURE.md).
 */
import { createHash } from 'node:crypto';
import { gatedTools } from '../approvals/policy.js';
import { BudgetExceeded } from '../budgets/types.js';
import { dailyBudgetSpent, dayOf, runBudget } from '../budgets/limits.js';
import { Owner, TooManyRuns } from '../callers/types.js';
import { ownerKey, owns } from '../callers/access.js';
import { conversationIdOf } from '../conversation/conversation.js';
import { StepwiseError, messageOf } from '../errors/errors.js';
import type { ErrorName } from '../errors/table.js';
import { zeroUsage } from '../model/messages.js';
import type { Run } from '../runs/types.js';
import type { CreateRunBody } from './request.js';
import { type CreateRunOptions, IdempotencyConflict, type IntakeDeps, RunIdTaken, SessionBusy } from './types.js';

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

/** The lock of an owner's session: session ids are per owner, so another caller's is another lock. */
export function sessionLockId(owner: Owner, sessionId: string): string {
  return `${ownerKey(owner)}/${sessionId}`;
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
        error: { code: 'StartFailed' satisfies ErrorName, message: `The run could not be started: ${messageOf(error)}` },
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
