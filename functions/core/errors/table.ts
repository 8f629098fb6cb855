/**
 * Every error Stepwise names, in one table (habit 19, docs/code-habits.md; docs/ARCHITECTURE.md,
 * "Error names are a contract"): the state machines' `Retry`/`Catch` select on these names, run
 * records and events carry them as `error.code`, and the API answers with them. Each class of the
 * family (`errors.ts`) takes its status and retry flag from here, so they are written once.
 *
 * - `status`: what the API answers when a request meets the error. 500 for errors no request
 *   should meet: the API logs them and answers `InternalError`, never their message.
 * - `transient`: a state machine `Retry` tries the step again (with backoff and jitter).
 * - `infrastructure`: a fault below the agent (storage, network, a service); a tool that meets one
 *   throws it rather than answering the model with a tool error.
 * - `code`: the API's code when it is not the name (refused like a body that fails its schema).
 */
export interface ErrorSpec {
  readonly status: number;
  readonly transient?: true;
  readonly infrastructure?: true;
  readonly code?: string;
}

export const errorTable = {
  // Requests the API refuses: the caller can do something about them.
  ValidationFailed: { status: 400 },
  UnsupportedMediaType: { status: 400 },
  InvalidJson: { status: 400 },
  InvalidCursor: { status: 400 },
  InvalidPath: { status: 400 },
  InvalidEditedInput: { status: 400, code: 'ValidationFailed' },
  InvalidFork: { status: 400, code: 'ValidationFailed' },
  InvalidMemory: { status: 400, code: 'ValidationFailed' },
  Unauthenticated: { status: 401 },
  Forbidden: { status: 403 },
  NotFound: { status: 404 },
  RunNotFound: { status: 404 },
  /** A client run id another caller's run has: answered as a run the caller may not see (docs/callers-and-security.md). */
  RunIdTaken: { status: 404, code: 'RunNotFound' },
  FileNotFound: { status: 404 },
  MemoryNotFound: { status: 404 },
  ApprovalNotFound: { status: 404 },
  /** No schedule with that id that the caller may see: the same answer as a missing one (docs/schedules.md). */
  ScheduleNotFound: { status: 404 },
  IdempotencyConflict: { status: 409 },
  SessionBusy: { status: 409 },
  RunNotRunning: { status: 409 },
  ApprovalAlreadyDecided: { status: 409 },
  ForkTooLarge: { status: 409 },
  FileTooLarge: { status: 413 },
  TooManyRuns: { status: 429 },
  TooManyStreams: { status: 429 },
  TooManySchedules: { status: 429 },
  BudgetExceeded: { status: 429 },
  NotImplemented: { status: 501 },

  // Faults below the agent. The transient ones are retried by the state machine; a fault that
  // reaches the API is logged and answered 500.
  ModelThrottled: { status: 500, transient: true, infrastructure: true },
  ModelOverloaded: { status: 500, transient: true, infrastructure: true },
  ModelUnavailable: { status: 500, transient: true, infrastructure: true },
  ModelResponseEmpty: { status: 500, transient: true, infrastructure: true },
  StoreUnavailable: { status: 500, transient: true, infrastructure: true },
  WorkspaceUnavailable: { status: 500, transient: true, infrastructure: true },
  ToolUnavailable: { status: 500, transient: true, infrastructure: true },
  OrchestratorUnavailable: { status: 500, transient: true, infrastructure: true },
  WorkspaceFailed: { status: 500, infrastructure: true },
  IssuerUnavailable: { status: 500 },

  // How a run ends other than by succeeding (its `error.code`): the model, the loop, its state.
  MaxIterationsExceeded: { status: 500 },
  ModelRefused: { status: 500 },
  /** A step of a run that was cancelled meanwhile (its execution's stop failed or is on its way): no model call. */
  RunCancelled: { status: 409 },
  ContextWindowExceeded: { status: 500 },
  ModelRequestInvalid: { status: 500 },
  ModelAccessDenied: { status: 403 },
  ModelNotConfigured: { status: 500 },
  ApprovalPolicyInvalid: { status: 500 },
  /** A deployment's agent or workflow definitions are invalid: `cdk synth` and `npm run dev` stop on it. */
  AgentConfigInvalid: { status: 500 },
  /** A run names an agent version that is stored nowhere (its definition was never written). */
  AgentDefinitionMissing: { status: 500 },
  ScriptExhausted: { status: 500 },
  StepStateInvalid: { status: 500 },
  StoredDataInvalid: { status: 500 },
  InvalidStepInput: { status: 500 },

  // What a tool answers the model with (an `is_error` result), and the approval step's signal.
  PathRejected: { status: 400 },
  WorkspaceRefused: { status: 400 },
  WriteConflict: { status: 409 },
  ApprovalDecided: { status: 500 },

  // Names with no class: written on a run record (or by a state machine's Fail state) where it ends.
  /** A multi-agent run's Architect stored no plan (the orchestrator). */
  NoPlanProduced: { status: 500 },
  /** A child run's agent loop ended without an answer (the tool that called its agent). */
  NoAnswer: { status: 500 },
  /** A step's transient fault outlasted its retries (the agent loop names the fault and its cause). */
  RetriesExhausted: { status: 500 },
  /** Step Functions refused to start the run for good (the intake). */
  StartFailed: { status: 500 },
  /** The orchestrator execution was stopped, outlived the run's timeout, or failed outside its states (execution-ended). */
  ExecutionAborted: { status: 500 },
  ExecutionTimedOut: { status: 500 },
  ExecutionFailed: { status: 500 },

  // The API's answer to anything it did not expect.
  InternalError: { status: 500 },
} as const satisfies Record<string, ErrorSpec>;

/** The name of an error of the family: its `name`, and (unless the table says otherwise) its API code. */
export type ErrorName = keyof typeof errorTable;

/** The names a state machine's `Retry` selects on: the transient errors, sorted. */
export function transientErrorNames(): ErrorName[] {
  return (Object.keys(errorTable) as ErrorName[]).filter((name) => specOf(name).transient === true).sort();
}

/** The table's entry for a name. */
export function specOf(name: ErrorName): ErrorSpec {
  return errorTable[name];
}
