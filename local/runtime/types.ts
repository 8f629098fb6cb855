/**
 * The local runtime's records: an execution as the local Step Functions API reports it, and the
 * local handlers bound to a state machine's Tasks.
 */
import type { RunOptions } from 'aws-local-stepfunctions';

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'ABORTED' | 'TIMED_OUT';

export interface LocalExecution {
  executionArn: string;
  stateMachineArn: string;
  name: string;
  input: string;
  status: ExecutionStatus;
  output?: string;
  error?: string;
  cause?: string;
  startDate: Date;
  stopDate?: Date;
  /** The largest state input or output seen, in bytes (invariant 1, docs/ARCHITECTURE.md). */
  maxPayloadBytes: number;
  /** State transitions so far. */
  transitions: number;
  /** The names of the top-level states entered, in order. */
  trail: string[];
}

export type TaskHandlers = NonNullable<NonNullable<RunOptions['overrides']>['taskResourceLocalHandlers']>;

/** The local handler of every Task of one state machine, by state name, as the interpreter takes them. */
export interface Bindings {
  handlers: TaskHandlers;
  /** The states with a `Retry`, whose waits tests may shorten. */
  retryable: string[];
}
