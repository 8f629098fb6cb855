/**
 * Runs the synthesized state machines on one machine. The parts: `executions.ts` (the
 * interpreter and what Step Functions says about each execution), `task-tokens.ts`
 * (`.waitForTaskToken`), `event-bus.ts` (the local bus) and `bindings.ts` (each Task bound, by its
 * resource ARN, to a local stand-in for the service it calls). `LocalRuntime` puts them together
 * and is what the local Step Functions API and the tests talk to.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { executionStatusChangeDetailType, executionStatusChangeSource } from '../../functions/core/runs/execution-ended.js';
import type { LocalFunction, LocalStateMachine } from '../definitions.js';
import { type LocalHandler, bindTasks } from './bindings.js';
import { type LocalEvent, LocalEventBus, type PutEventsEntry } from './event-bus.js';
import { Executions } from './executions.js';
import type { LocalExecution } from './types.js';
import { TaskTokens } from './task-tokens.js';

export type { LocalHandler } from './bindings.js';
export type { LocalEvent, PutEventsEntry } from './event-bus.js';
export type { ExecutionStatus, LocalExecution } from './types.js';
export {
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  InvalidName,
  InvalidOutput,
  InvalidToken,
  StateMachineDoesNotExist,
  TaskTimedOut,
} from './errors.js';

export interface LocalRuntimeOptions {
  stateMachines: LocalStateMachine[];
  functions: LocalFunction[];
  /** The handler module of each `STEPWISE_HANDLER` name. */
  handlers: Record<string, LocalHandler>;
  dynamo: DynamoDBClient;
  /** Reads an object of the local bucket: the items of a Map that reads them (`distributed-map.ts`). */
  readObject?: (bucket: string, key: string) => Promise<string>;
  /** Milliseconds between retries in place of the definition's backoff (tests); real backoff when absent. */
  retryIntervalMs?: number;
  /** Called with every event the bus carries. */
  onEvent?: (event: LocalEvent) => void;
  /**
   * Checks each definition against the ASL schema when the runtime is built (about half a second
   * a state machine). The local stack's definitions come from CDK and a test checks them, so it
   * starts without. @default true
   */
  validateDefinitions?: boolean;
}

/** The "Execution Status Change" event of an execution that ended, shaped as Step Functions sends it. */
function statusChangeEntry(execution: LocalExecution): PutEventsEntry {
  return {
    Source: executionStatusChangeSource,
    DetailType: executionStatusChangeDetailType,
    EventBusName: 'default',
    Detail: {
      executionArn: execution.executionArn,
      stateMachineArn: execution.stateMachineArn,
      name: execution.name,
      status: execution.status,
      startDate: execution.startDate.getTime(),
      stopDate: (execution.stopDate ?? new Date()).getTime(),
      input: execution.input,
      output: null,
      error: execution.error ?? null,
      cause: execution.cause ?? null,
    },
  };
}

/** The local Step Functions: executions, task tokens and the event bus of one stack. */
export class LocalRuntime {
  private readonly tokens = new TaskTokens();
  private readonly bus: LocalEventBus;
  private readonly executions: Executions;

  constructor(options: LocalRuntimeOptions) {
    this.bus = new LocalEventBus(options.onEvent);
    // Functions that no state machine calls (the API, the intake) need no binding here.
    const functions = new Map<string, LocalHandler>();
    for (const fn of options.functions) {
      const handler = options.handlers[fn.handler];
      if (handler) functions.set(fn.arn, handler);
    }
    const targets = {
      functions,
      dynamo: options.dynamo,
      ...(options.readObject ? { readObject: options.readObject } : {}),
      tokens: this.tokens,
      bus: this.bus,
      // Nested executions run on this runtime; called only once a run has started.
      executions: {
        start: (arn: string, name: string | undefined, input: string) => this.executions.start(arn, name, input),
        wait: (arn: string) => this.executions.wait(arn),
      },
    };
    this.executions = new Executions({
      stateMachines: options.stateMachines,
      bind: (machine) => bindTasks(machine, targets),
      tokens: this.tokens,
      ...(options.retryIntervalMs !== undefined ? { retryIntervalMs: options.retryIntervalMs } : {}),
      ...(options.validateDefinitions !== undefined ? { validate: options.validateDefinitions } : {}),
      // As Step Functions does, each execution that ends ABORTED, FAILED or TIMED_OUT is reported
      // on the default bus (the local runtime reports no other status changes).
      onEnded: (execution) => this.bus.put([statusChangeEntry(execution)]),
    });
  }

  /** Every event put on the local bus, in order. */
  get events(): LocalEvent[] {
    return this.bus.events;
  }

  /** The ARN of the state machine whose logical id contains `part`. */
  stateMachineArn(part: string): string {
    return this.executions.stateMachineArn(part);
  }

  /**
   * Starts an execution; a second start with the same name and input returns the first one, as
   * Step Functions does for Standard workflows; with another input it is refused.
   */
  start(stateMachineArn: string, name: string | undefined, input: string): LocalExecution {
    return this.executions.start(stateMachineArn, name, input);
  }

  describe(executionArn: string): LocalExecution {
    return this.executions.describe(executionArn);
  }

  /** Stops an execution and the nested ones it started. Handlers already running finish on their own. */
  stop(executionArn: string, error?: string, cause?: string): LocalExecution {
    return this.executions.stop(executionArn, error, cause);
  }

  /** Resolves when the execution has stopped. */
  wait(executionArn: string): Promise<LocalExecution> {
    return this.executions.wait(executionArn);
  }

  /** Every execution started so far. */
  list(): LocalExecution[] {
    return this.executions.list();
  }

  /** Waits for every running execution to stop. */
  idle(): Promise<void> {
    return this.executions.idle();
  }

  /** `SendTaskSuccess`: the waiting task succeeds with `output` (a JSON text). */
  sendTaskSuccess(token: string, output: string): void {
    this.tokens.succeed(token, output);
  }

  /** `SendTaskFailure`: the waiting task fails with `error` and `cause`. */
  sendTaskFailure(token: string, error?: string, cause?: string): void {
    this.tokens.fail(token, error, cause);
  }

  /** `SendTaskHeartbeat`: the waiting task's heartbeat clock starts again. */
  sendTaskHeartbeat(token: string): void {
    this.tokens.heartbeat(token);
  }

  /** The task tokens being waited on, with their executions (tests and shutdown). */
  waitingTokens(): { token: string; executionArn: string }[] {
    return this.tokens.waiting();
  }

  /**
   * Stops the executions that wait on a task token, from the top of their nesting: nobody can
   * answer them once the runtime goes away (the local runtime keeps no state across restarts).
   */
  abandonWaits(): void {
    for (const { executionArn } of this.waitingTokens()) {
      this.stop(this.executions.root(executionArn), 'States.Aborted', 'The local runtime shut down while the run waited for a task token.');
    }
  }

  /** Puts events on the local bus; `Detail` is a JSON string (the API) or an object (the Step Functions integration). */
  putEvents(entries: PutEventsEntry[]): string[] {
    return this.bus.put(entries);
  }
}
