/**
 * The error family (docs/ARCHITECTURE.md, "Error names are a contract"): one base class
 * whose `code`, `status` and `transient` come from the table of every name (`table.ts`), and a
 * factory that makes a named class of it. Step Functions `Retry`/`Catch` select on `name`, so each
 * name is part of the contract:
 *
 *   export class BudgetExceeded extends named('BudgetExceeded') {}
 */
import { type ErrorName, specOf } from './table.js';

/** One thing wrong with a request or an input: where (a body field, a header, a parameter) and what. */
export interface Issue {
  path: string;
  message: string;
}

/** The base of every named error. */
export abstract class StepwiseError extends Error {
  abstract override readonly name: ErrorName;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }

  /** What the API answers with: the name, unless the table gives another code. */
  get code(): string {
    return specOf(this.name).code ?? this.name;
  }

  /** The HTTP status the API answers with. */
  get status(): number {
    return specOf(this.name).status;
  }

  /** Whether a state machine `Retry` should try the step again. */
  get transient(): boolean {
    return specOf(this.name).transient === true;
  }

  /** What is wrong, field by field, for an error refused like a body that fails its schema. */
  readonly issues?: Issue[];
}

/** A fault below the agent (storage, network, a service): thrown, never turned into a tool result. */
export abstract class InfrastructureError extends StepwiseError {}

/**
 * The base class of the error named `name`: a fault below the agent when the table says so. A
 * subclass adds only what its errors carry beyond a message.
 */
export function named<const Name extends ErrorName>(name: Name) {
  const base: typeof StepwiseError = specOf(name).infrastructure ? InfrastructureError : StepwiseError;
  abstract class Named extends base {
    override readonly name: Name = name;
  }
  return Named;
}

/** Something a caller asked for does not exist. */
export class NotFound extends named('NotFound') {}

/** The stored state does not allow the step that was asked for: a bug or a manual edit. */
export class StepStateInvalid extends named('StepStateInvalid') {}

/** A stored item failed its schema: corruption, not a retryable fault. */
export class StoredDataInvalid extends named('StoredDataInvalid') {}

/** The message of an unknown thrown value. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
