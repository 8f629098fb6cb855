/**
 * The base of every named error. Step Functions `Retry`/`Catch` select on `name`, so each
 * subclass's name is part of the contract (habit 4, docs/ARCHITECTURE.md).
 */
export abstract class StepwiseError extends Error {
  abstract override readonly name: string;
  /** Whether a state machine `Retry` should try the step again. */
  readonly transient: boolean = false;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A fault below the agent (storage, network): thrown, never turned into a tool result. */
export abstract class InfrastructureError extends StepwiseError {}

/** Something a caller asked for does not exist. */
export class NotFound extends StepwiseError {
  override readonly name = 'NotFound';
}

/** The stored state does not allow the step that was asked for: a bug or a manual edit. */
export class StepStateInvalid extends StepwiseError {
  override readonly name = 'StepStateInvalid';
}

/** A stored item failed its schema: corruption, not a retryable fault. */
export class StoredDataInvalid extends StepwiseError {
  override readonly name = 'StoredDataInvalid';
}

/** A concrete class of the family, as a module exports it. */
type StepwiseErrorClass = new (message: string) => StepwiseError;

/**
 * The names of the transient errors among the classes `modules` export, sorted. A state machine's
 * `Retry` selects on these names, so the `transient` flag on a class is the one place an error is
 * marked retryable.
 */
export function transientErrorNames(...modules: object[]): string[] {
  const names = modules
    .flatMap((module) => Object.values(module))
    .filter((value): value is StepwiseErrorClass => typeof value === 'function' && value.prototype instanceof StepwiseError)
    .map((ErrorClass) => new ErrorClass(''))
    .filter((error) => error.transient)
    .map((error) => error.name);
  return [...new Set(names)].sort();
}

/** The message of an unknown thrown value. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
