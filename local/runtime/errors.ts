/**
 * The error family of the local runtime. The names are those the Step Functions API answers
 * with (the local `SFNClient` maps them to its own exception classes) or, for a `TaskError`, the
 * ASL error name that a state's `Retry` and `Catch` select on.
 */
import { ExecutionError } from 'aws-local-stepfunctions';

/** Thrown by a task with the error name Step Functions would report. */
export class TaskError extends Error {
  constructor(name: string, cause: string) {
    super(cause);
    this.name = name;
  }
}

export class ExecutionDoesNotExist extends Error {
  override readonly name = 'ExecutionDoesNotExist';
}
export class StateMachineDoesNotExist extends Error {
  override readonly name = 'StateMachineDoesNotExist';
}
export class ExecutionAlreadyExists extends Error {
  override readonly name = 'ExecutionAlreadyExists';
}
export class InvalidName extends Error {
  override readonly name = 'InvalidName';
}
export class TaskTimedOut extends Error {
  override readonly name = 'TaskTimedOut';
}
export class InvalidToken extends Error {
  override readonly name = 'InvalidToken';
}
export class InvalidOutput extends Error {
  override readonly name = 'InvalidOutput';
}

/** The error name and message of a failure, unwrapping the interpreter's wrapper. */
export function failureOf(error: unknown): { name: string; message: string } {
  let inner = error;
  if (error instanceof ExecutionError && error.cause instanceof Error) inner = error.cause;
  if (inner instanceof Error) return { name: inner.name, message: inner.message };
  return { name: 'Error', message: String(inner) };
}
