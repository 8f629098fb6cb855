/**
 * Runs whose orchestrator execution ended outside the orchestrator's own states: stopped in the
 * console, timed out, or failed where no `Catch` saw it. Step Functions reports each as an
 * "Execution Status Change" event; the run is then marked failed and its session freed, so
 * nothing stays `running` for good (invariant 13, docs/ARCHITECTURE.md).
 */
import * as z from 'zod';
import type { ErrorName } from '../errors/table.js';
import { type SessionLocks } from '../intake/types.js';
import { sessionLockId } from '../intake/create.js';
import { descendantsOf } from './descendants.js';
import type { RunError, RunStore } from './types.js';

export const executionStatusChangeSource = 'aws.states';
export const executionStatusChangeDetailType = 'Step Functions Execution Status Change';

/** The statuses of an execution that ended without running its last state. */
export const EndedStatus = z.enum(['ABORTED', 'TIMED_OUT', 'FAILED']);
export type EndedStatus = z.infer<typeof EndedStatus>;

/** The rule's event pattern: the orchestrator's executions that ended so, nothing else. */
export function executionEndedPattern(orchestratorArn: string) {
  return {
    source: [executionStatusChangeSource],
    detailType: [executionStatusChangeDetailType],
    detail: { stateMachineArn: [orchestratorArn], status: [...EndedStatus.options] },
  };
}

/** An "Execution Status Change" event, as far as it is read here. */
export const ExecutionStatusChange = z.object({
  'detail-type': z.literal(executionStatusChangeDetailType),
  source: z.literal(executionStatusChangeSource),
  detail: z.object({
    executionArn: z.string(),
    stateMachineArn: z.string(),
    name: z.string(),
    status: z.string(),
    /** The execution's input; `null` when too large to carry (never for the orchestrator's ids-only input). */
    input: z.string().nullish(),
    error: z.string().nullish(),
    cause: z.string().nullish(),
  }),
});
export type ExecutionStatusChange = z.infer<typeof ExecutionStatusChange>;

/** The orchestrator's input, as far as it names the run and tells an announcement apart. */
const OrchestratorInputIds = z.object({ runId: z.string().min(1).optional(), announce: z.string().optional() });

export interface ExecutionEndedDeps {
  runs: RunStore;
  sessions: SessionLocks;
  /** Only this state machine's executions are runs. */
  orchestratorArn: string;
}

export type ExecutionEndedOutcome =
  | { marked: true; runId: string; status: EndedStatus; error: RunError }
  | { marked: false; runId?: string; reason: string };

/** The error code a run gets for each way its execution can end outside its states. */
export const executionEndedCodes = {
  ABORTED: 'ExecutionAborted',
  TIMED_OUT: 'ExecutionTimedOut',
  FAILED: 'ExecutionFailed',
} as const satisfies Record<EndedStatus, ErrorName>;

/**
 * Marks the run of an orchestrator execution that ended outside its states failed, if the run is
 * still running, and frees its session. Idempotent: a redelivered event finds the run ended and
 * the session free or another run's, and changes nothing. Executions that are not runs (another
 * state machine, the `<runId>-cancelled` announcement) are left alone.
 */
export async function markEndedRun(event: unknown, deps: ExecutionEndedDeps): Promise<ExecutionEndedOutcome> {
  const parsed = ExecutionStatusChange.safeParse(event);
  if (!parsed.success) return { marked: false, reason: 'Not a Step Functions execution status change.' };
  const { detail } = parsed.data;
  if (detail.stateMachineArn !== deps.orchestratorArn) return { marked: false, reason: 'Not an orchestrator execution.' };
  const status = EndedStatus.safeParse(detail.status);
  if (!status.success) return { marked: false, reason: `The execution ${detail.status.toLowerCase()}; its states recorded the run.` };
  const input = OrchestratorInputIds.safeParse(parseJson(detail.input));
  const ids = input.success ? input.data : {};
  if (ids.announce) return { marked: false, reason: 'An announcement, not a run.' };
  // Executions are named after their run; the input says so too when it is there.
  const runId = ids.runId ?? detail.name;
  const run = await deps.runs.get(runId);
  if (!run) return { marked: false, runId, reason: 'No such run.' };

  let outcome: ExecutionEndedOutcome = { marked: false, runId, reason: `The run is ${run.status} already.` };
  const ended = { code: executionEndedCodes[status.data], message: messageFor(status.data, detail.error, detail.cause) };
  if (run.status === 'running') {
    const error: RunError = { ...ended, ...(run.currentAgent ? { agent: run.currentAgent } : {}) };
    // Conditional: the run's own states, or a cancel, may have ended it since it was read.
    if (await deps.runs.failIfRunning(runId, error)) outcome = { marked: true, runId, status: status.data, error };
    else outcome = { marked: false, runId, reason: 'The run ended meanwhile.' };
  }
  // Its child runs' nested executions ended with it, also when its own states recorded its failure
  // (the execution then ends FAILED at RunFailed, the run's error saying why): those still marked
  // running fail the same way. A cancelled run's children were cancelled with it (the cancel walks them).
  if (run.status !== 'cancelled') {
    const why = (run.status === 'failed' && run.error) || ended;
    for await (const child of descendantsOf(run, deps.runs)) {
      await deps.runs.failIfRunning(child.runId, { code: why.code, message: `Its parent run ${child.parentRunId} ended: ${why.message}`, agent: child.agent });
    }
  }
  // Whatever ended the run, its session is free now; a lock another run holds is left alone.
  if (run.sessionId && run.owner) await deps.sessions.release(sessionLockId(run.owner, run.sessionId), runId);
  return outcome;
}

function messageFor(status: EndedStatus, error?: string | null, cause?: string | null): string {
  const why = [error, cause].filter(Boolean).join(': ');
  const detail = why ? ` (${why})` : '';
  switch (status) {
    case 'ABORTED':
      return `The run's orchestrator execution was stopped outside Stepwise${detail}.`;
    case 'TIMED_OUT':
      return `The run did not finish within the orchestrator's time limit${detail}.`;
    case 'FAILED':
      return `The run's orchestrator execution failed where no state recorded it${detail}.`;
  }
}

function parseJson(text: string | null | undefined): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
