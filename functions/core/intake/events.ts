/**
 * Runs requested by events: the same validation and run creation as `POST /runs`, and nothing
 * dropped silently (invariant 10, docs/ARCHITECTURE.md).
 */
import * as z from 'zod';
import { type Caller, Forbidden } from '../callers/types.js';
import { callerFromEvent } from '../callers/claims.js';
import { StepwiseError, messageOf } from '../errors/errors.js';
import { type DeadLetters, type IntakeDeps, type IntakeOutcome, RunIdTaken, SessionBusy } from './types.js';
import { createRun, stillRunning } from './create.js';
import { admitFiring } from '../schedules/fire.js';
import { runRequestedDetail, runRequestedDetailType } from './request.js';

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
  const { runId, onBehalfOf, scheduleId, traceparent, ...body } = detail.data;
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
  let chosen = runId ?? fallback;
  if (scheduleId) {
    // A schedule's firing: the schedule must be the caller's, enabled, and free to start (docs/schedules.md).
    chosen ??= deps.newId();
    const clock = deps.clock ?? (() => new Date());
    const admission = deps.schedules
      ? await admitFiring(caller, scheduleId, chosen, { schedules: deps.schedules, isRunning: (id) => stillRunning(id, deps, clock()), clock })
      : { admit: false as const, skipped: false, reason: 'This deployment keeps no schedules.' };
    if (!admission.admit) {
      if (!admission.skipped) await deps.deadLetters.send({ reason: admission.reason, issues: [{ path: 'detail.scheduleId', message: admission.reason }], event });
      return { accepted: false, reason: admission.reason };
    }
  }
  try {
    const started = await createRun(body, deps, { caller, ...(chosen ? { runId: chosen } : {}), ...(scheduleId ? { scheduleId } : {}), ...(traceparent ? { traceparent } : {}) });
    return { accepted: true, runId: started.runId };
  } catch (error) {
    if (worthRetrying(error)) throw error;
    // Refusals and failures that no redelivery can change end in the dead letters, with the reason.
    const taken = error instanceof RunIdTaken;
    // The dead letters are the operators' to read, not the sender's: they say what happened.
    const reason = taken
      ? `The run id ${chosen ?? ''} belongs to another caller's run; choose another.`
      : error instanceof StepwiseError
        ? error.message
        : `The run could not be started: ${messageOf(error)}`;
    const path = taken ? 'detail.runId' : '(event)';
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
