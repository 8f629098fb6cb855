/**
 * Runs the synthesized state machines on one machine: aws-local-stepfunctions interprets the
 * ASL, and every Task is bound, by its resource ARN, to a local stand-in for the service it
 * calls: the Lambda handler modules in-process, the DynamoDB emulator, nested local executions,
 * a local event bus, and task tokens for `.waitForTaskToken` (resolved by `SendTaskSuccess` /
 * `SendTaskFailure`). A Task with no binding fails loudly when the runtime is built.
 */
import '../polyfills.js';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  ExecutionAbortedError,
  ExecutionError,
  type RunOptions,
  StateMachine,
  type StateMachineDefinition,
} from 'aws-local-stepfunctions';
import type { LocalFunction, LocalStateMachine } from '../definitions.js';
import { localAccount } from '../definitions.js';
import { localRegion } from '../stand-ins/emulators.js';

/** A Lambda handler as the runtime calls it. */
export type LocalHandler = (event: unknown) => Promise<unknown>;

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'ABORTED';

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

/** A PutEvents entry as the local bus keeps it. */
export interface LocalEvent {
  id: string;
  time: string;
  source: string;
  detailType: string;
  detail: unknown;
  eventBusName: string;
}

export interface LocalRuntimeOptions {
  stateMachines: LocalStateMachine[];
  functions: LocalFunction[];
  /** The handler module of each `STEPWISE_HANDLER` name. */
  handlers: Record<string, LocalHandler>;
  dynamo: DynamoDBClient;
  /** Milliseconds between retries in place of the definition's backoff (tests); real backoff when absent. */
  retryIntervalMs?: number;
  /** Called with every event the bus carries. */
  onEvent?: (event: LocalEvent) => void;
}

/** Thrown by a binding with the error name Step Functions would report. */
class TaskError extends Error {
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

/** The interpreter's own default `TimeoutSeconds` of a Task. */
const defaultTaskTimeoutSeconds = 60;
const tokenPattern = /^AQ[A-Za-z0-9_-]{80,}$/;

/** A task waiting on its token. */
interface TokenWait {
  executionArn: string;
  resolve(output: unknown): void;
  reject(error: Error): void;
  timers: NodeJS.Timeout[];
  /** Restarts the heartbeat clock (`SendTaskHeartbeat`). */
  beat(): void;
}

interface Running {
  execution: LocalExecution;
  done: Promise<void>;
  abort: () => void;
}

export class LocalRuntime {
  readonly events: LocalEvent[] = [];
  private readonly machines = new Map<string, { machine: StateMachine; local: LocalStateMachine; bindings: Bindings }>();
  private readonly executions = new Map<string, Running>();
  private readonly functions = new Map<string, LocalHandler>();
  /** Tokens handed out through `$$.Task.Token` and not yet waited on, with their execution. */
  private readonly issued = new Map<string, string>();
  private readonly waits = new Map<string, TokenWait>();

  constructor(private readonly options: LocalRuntimeOptions) {
    // Functions that no state machine calls (the API, the intake) need no binding here.
    for (const fn of options.functions) {
      const handler = options.handlers[fn.handler];
      if (handler) this.functions.set(fn.arn, handler);
    }
    for (const local of options.stateMachines) {
      const definition = local.definition as unknown as StateMachineDefinition;
      const machine = new StateMachine(definition, { validationOptions: { checkArn: false, checkPaths: false } });
      this.machines.set(local.arn, { machine, local, bindings: this.bind(local) });
    }
  }

  /** The ARN of the state machine whose logical id contains `part`. */
  stateMachineArn(part: string): string {
    const found = [...this.machines.values()].find((m) => m.local.logicalId.includes(part));
    if (!found) throw new StateMachineDoesNotExist(`No local state machine matches "${part}".`);
    return found.local.arn;
  }

  /**
   * Starts an execution; a second start with the same name and input returns the first one, as
   * Step Functions does for Standard workflows; with another input it is refused.
   */
  start(stateMachineArn: string, name: string | undefined, input: string): LocalExecution {
    const entry = this.machines.get(stateMachineArn);
    if (!entry) throw new StateMachineDoesNotExist(`State machine ${stateMachineArn} does not exist.`);
    const executionName = name ?? randomUUID();
    const executionArn = `arn:aws:states:${localRegion}:${localAccount}:execution:${entry.local.name}:${executionName}`;
    if (!/^[A-Za-z0-9_-]{1,80}$/.test(executionName)) {
      throw new InvalidName(`Execution name "${executionName}" is not 1-80 letters, digits, "-" or "_".`);
    }
    const existing = this.executions.get(executionArn);
    if (existing) {
      // As Step Functions: the same name and input of a running execution returns it; a closed
      // execution, or another input, is refused.
      if (existing.execution.input !== input || existing.execution.status !== 'RUNNING') {
        throw new ExecutionAlreadyExists(`Execution ${executionName} already exists.`);
      }
      return existing.execution;
    }
    const execution: LocalExecution = {
      executionArn,
      stateMachineArn,
      name: executionName,
      input,
      status: 'RUNNING',
      startDate: new Date(),
      maxPayloadBytes: Buffer.byteLength(input),
      transitions: 0,
      trail: [],
    };
    const issue = () => this.issueToken(executionArn);
    const run = entry.machine.run(JSON.parse(input), {
      overrides: {
        taskResourceLocalHandlers: entry.bindings.handlers,
        ...(this.options.retryIntervalMs !== undefined
          ? { retryIntervalOverrides: Object.fromEntries(entry.bindings.retryable.map((s) => [s, this.options.retryIntervalMs ?? 0])) }
          : {}),
      },
      context: {
        Execution: { Id: executionArn, Name: executionName, RoleArn: `arn:aws:iam::${localAccount}:role/local` },
        StateMachine: { Id: stateMachineArn, Name: entry.local.name },
        // Read when a state's parameters are evaluated, so it is that state's entry time.
        State: {
          get EnteredTime() {
            return new Date().toISOString();
          },
        },
        // A fresh token each time a state's parameters read it, as each task attempt gets its own.
        Task: {
          get Token() {
            return issue();
          },
        },
      } as never,
    });
    const watch = (async () => {
      for await (const event of run.eventLogs) {
        const e = event as { type: string; index?: number; state?: { name: string; input?: unknown; output?: unknown } };
        if (e.type === 'StateEntered') {
          execution.transitions++;
          if (e.index === undefined && e.state) execution.trail.push(e.state.name);
        }
        for (const payload of [e.state?.input, e.state?.output]) {
          if (payload === undefined) continue;
          execution.maxPayloadBytes = Math.max(execution.maxPayloadBytes, Buffer.byteLength(JSON.stringify(payload)));
        }
      }
    })();
    const done = run.result
      .then((output) => {
        if (execution.status !== 'RUNNING') return;
        execution.status = 'SUCCEEDED';
        execution.output = JSON.stringify(output);
      })
      .catch((error: unknown) => {
        if (execution.status !== 'RUNNING') return;
        if (error instanceof ExecutionAbortedError) {
          execution.status = 'ABORTED';
          return;
        }
        const { name, message } = failureOf(error);
        execution.status = 'FAILED';
        execution.error = name;
        execution.cause = message;
      })
      .finally(() => {
        execution.stopDate ??= new Date();
        // A Map that failed leaves its other items' waits behind; their tokens are void now.
        this.endWaits(executionArn, 'The execution ended.');
      })
      .then(() => watch.catch(() => undefined));
    this.executions.set(executionArn, { execution, done, abort: run.abort });
    return execution;
  }

  describe(executionArn: string): LocalExecution {
    const running = this.executions.get(executionArn);
    if (!running) throw new ExecutionDoesNotExist(`Execution ${executionArn} does not exist.`);
    return running.execution;
  }

  /** Stops an execution and the nested ones it started. Handlers already running finish on their own. */
  stop(executionArn: string, error?: string, cause?: string): LocalExecution {
    const running = this.executions.get(executionArn);
    if (!running) throw new ExecutionDoesNotExist(`Execution ${executionArn} does not exist.`);
    if (running.execution.status === 'RUNNING') {
      running.execution.status = 'ABORTED';
      running.execution.stopDate = new Date();
      if (error) running.execution.error = error;
      if (cause) running.execution.cause = cause;
      running.abort();
      this.endWaits(executionArn, 'The execution was stopped.');
      for (const child of this.executions.values()) {
        if (child.execution.status === 'RUNNING' && parentOf(child.execution) === executionArn) {
          this.stop(child.execution.executionArn, error, cause);
        }
      }
    }
    return running.execution;
  }

  /** Resolves when the execution has stopped. */
  async wait(executionArn: string): Promise<LocalExecution> {
    const running = this.executions.get(executionArn);
    if (!running) throw new ExecutionDoesNotExist(`Execution ${executionArn} does not exist.`);
    await running.done;
    return running.execution;
  }

  /** Every execution started so far. */
  list(): LocalExecution[] {
    return [...this.executions.values()].map((r) => r.execution);
  }

  /** Waits for every running execution to stop. */
  async idle(): Promise<void> {
    await Promise.all([...this.executions.values()].map((r) => r.done));
  }

  /** `SendTaskSuccess`: the waiting task succeeds with `output` (a JSON text). */
  sendTaskSuccess(token: string, output: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(output);
    } catch {
      throw new InvalidOutput('The output is not valid JSON.');
    }
    this.takeWait(token).resolve(parsed);
  }

  /** `SendTaskFailure`: the waiting task fails with `error` and `cause`. */
  sendTaskFailure(token: string, error?: string, cause?: string): void {
    this.takeWait(token).reject(new TaskError(error || 'States.TaskFailed', cause ?? ''));
  }

  /** `SendTaskHeartbeat`: the waiting task's heartbeat clock starts again. */
  sendTaskHeartbeat(token: string): void {
    const wait = this.waits.get(token);
    if (!wait) throw this.tokenGone(token);
    wait.beat();
  }

  /** The task tokens being waited on, with their executions (tests and shutdown). */
  waitingTokens(): { token: string; executionArn: string }[] {
    return [...this.waits.entries()].map(([token, w]) => ({ token, executionArn: w.executionArn }));
  }

  /**
   * Stops the executions that wait on a task token, from the top of their nesting: nobody can
   * answer them once the runtime goes away (the local runtime keeps no state across restarts).
   */
  abandonWaits(): void {
    for (const { executionArn } of this.waitingTokens()) {
      let root = executionArn;
      for (let parent = this.parent(root); parent; parent = this.parent(root)) root = parent;
      this.stop(root, 'States.Aborted', 'The local runtime shut down while the run waited for a task token.');
    }
  }

  private parent(executionArn: string): string | undefined {
    const running = this.executions.get(executionArn);
    const parent = running && parentOf(running.execution);
    return parent && this.executions.has(parent) ? parent : undefined;
  }

  private issueToken(executionArn: string): string {
    const token = `AQ${randomBytes(72).toString('base64url')}`;
    this.issued.set(token, executionArn);
    return token;
  }

  /** The token a task's input carries (wherever its parameters put it), taken off the issued list. */
  private claimToken(input: unknown): { token: string; executionArn: string } | undefined {
    const seen: unknown[] = [input];
    while (seen.length) {
      const value = seen.pop();
      if (typeof value === 'string') {
        const executionArn = this.issued.get(value);
        if (executionArn) {
          this.issued.delete(value);
          return { token: value, executionArn };
        }
      } else if (value && typeof value === 'object') {
        seen.push(...Object.values(value));
      }
    }
    return undefined;
  }

  /**
   * Registers a wait on `token`: it ends with `SendTaskSuccess`/`SendTaskFailure`, with
   * `States.Timeout` when no heartbeat came within `HeartbeatSeconds`, and is forgotten when the
   * state's `TimeoutSeconds` pass (the interpreter fails the task with `States.Timeout` then).
   */
  private waitOn(token: string, executionArn: string, state: Record<string, unknown>): Promise<unknown> {
    let resolve!: (output: unknown) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<unknown>((ok, fail) => {
      resolve = ok;
      reject = fail;
    });
    const timeoutSeconds = typeof state.TimeoutSeconds === 'number' ? state.TimeoutSeconds : defaultTaskTimeoutSeconds;
    const heartbeatSeconds = typeof state.HeartbeatSeconds === 'number' ? state.HeartbeatSeconds : undefined;
    const end = () => {
      for (const timer of wait.timers) clearTimeout(timer);
      this.waits.delete(token);
    };
    const wait: TokenWait = {
      executionArn,
      resolve: (output) => (end(), resolve(output)),
      reject: (error) => (end(), reject(error)),
      // Timers never keep the process alive: a wait ends with its execution anyway.
      timers: [setTimeout(end, timeoutSeconds * 1000).unref()],
      beat: () => {
        if (heartbeatSeconds === undefined) return;
        clearTimeout(wait.timers[1]);
        wait.timers[1] = setTimeout(
          () => wait.reject(new TaskError('States.Timeout', `No heartbeat within ${heartbeatSeconds} seconds.`)),
          heartbeatSeconds * 1000,
        ).unref();
      },
    };
    wait.beat();
    this.waits.set(token, wait);
    // A wait that ends while nobody listens (its execution stopped) is not an unhandled rejection.
    promise.catch(() => undefined);
    return promise;
  }

  private takeWait(token: string): TokenWait {
    const wait = this.waits.get(token);
    if (!wait) throw this.tokenGone(token);
    return wait;
  }

  private tokenGone(token: string): Error {
    return tokenPattern.test(token)
      ? new TaskTimedOut('The task no longer waits on this token: it timed out, was answered, or its execution stopped.')
      : new InvalidToken('The task token is not valid.');
  }

  /** Ends the waits of a stopped execution. */
  private endWaits(executionArn: string, cause: string): void {
    for (const [token, wait] of this.waits) {
      if (wait.executionArn === executionArn) wait.reject(new TaskError('States.Aborted', `${cause} (${token.slice(0, 8)}…)`));
    }
  }

  /** Puts events on the local bus; `Detail` is a JSON string (the API) or an object (the Step Functions integration). */
  putEvents(entries: { Source?: string; DetailType?: string; Detail?: string | object; EventBusName?: string }[]): string[] {
    return entries.map((entry) => {
      const event: LocalEvent = {
        id: randomUUID(),
        time: new Date().toISOString(),
        source: entry.Source ?? '',
        detailType: entry.DetailType ?? '',
        detail: typeof entry.Detail === 'string' ? JSON.parse(entry.Detail) : (entry.Detail ?? {}),
        eventBusName: entry.EventBusName ?? 'default',
      };
      this.events.push(event);
      this.options.onEvent?.(event);
      return event.id;
    });
  }

  /** A local handler for every Task of the definition, chosen by its resource ARN. */
  private bind(local: LocalStateMachine): Bindings {
    const handlers: TaskHandlers = {};
    const retryable: string[] = [];
    walk(local.definition, (name, state) => {
      if (Array.isArray(state.Retry)) retryable.push(name);
      if (state.Type !== 'Task') return;
      const resource = String(state.Resource);
      handlers[name] = this.binding(resource, state, `${local.logicalId}.${name}`) as TaskHandlers[string];
    });
    return { handlers, retryable };
  }

  private binding(resource: string, state: Record<string, unknown>, where: string): (input: unknown) => Promise<unknown> {
    const parameters = (state.Parameters ?? {}) as Record<string, unknown>;
    const direct = this.functions.get(resource);
    if (direct) {
      // A Task whose resource is the function itself: the input is the event, the result the payload.
      return (input) => invokeLocal(direct, input);
    }
    const service = resource.replace(/^arn:aws:states:::/, '');
    switch (service) {
      case 'lambda:invoke': {
        const handler = this.functions.get(String(parameters.FunctionName));
        if (!handler) throw new Error(`${where}: no local function for ${String(parameters.FunctionName)}.`);
        return async (input) => {
          const { Payload } = input as { Payload: unknown };
          return { StatusCode: 200, ExecutedVersion: '$LATEST', Payload: await invokeLocal(handler, Payload) };
        };
      }
      case 'lambda:invoke.waitForTaskToken': {
        const handler = this.functions.get(String(parameters.FunctionName));
        if (!handler) throw new Error(`${where}: no local function for ${String(parameters.FunctionName)}.`);
        return async (input) => {
          const { Payload } = input as { Payload: unknown };
          const claimed = this.claimToken(Payload);
          if (!claimed) throw new TaskError('States.Runtime', `${where}: the payload of a .waitForTaskToken task must carry $$.Task.Token.`);
          // Wait first: an answer may come before the function returns.
          const answered = this.waitOn(claimed.token, claimed.executionArn, state);
          try {
            await invokeLocal(handler, Payload);
          } catch (error) {
            this.waits.get(claimed.token)?.reject(error as Error);
            throw error;
          }
          // The task's result is the output of SendTaskSuccess, not the function's answer.
          return answered;
        };
      }
      case 'dynamodb:updateItem':
      case 'dynamodb:putItem':
      case 'dynamodb:getItem':
      case 'dynamodb:deleteItem': {
        const dynamo = this.options.dynamo;
        // The task's parameters are the API call's input, as Step Functions passes them.
        const call = {
          'dynamodb:updateItem': (input: never) => dynamo.send(new UpdateItemCommand(input)),
          'dynamodb:putItem': (input: never) => dynamo.send(new PutItemCommand(input)),
          'dynamodb:getItem': (input: never) => dynamo.send(new GetItemCommand(input)),
          'dynamodb:deleteItem': (input: never) => dynamo.send(new DeleteItemCommand(input)),
        }[service];
        return async (input) => {
          try {
            const { $metadata: _metadata, ...output } = await call(input as never);
            return output as unknown;
          } catch (error) {
            const { name, message } = failureOf(error);
            throw new TaskError(`DynamoDB.${name}`, message);
          }
        };
      }
      case 'states:startExecution.sync:2':
      case 'states:startExecution.sync':
      case 'states:startExecution':
        return async (input) => {
          const { StateMachineArn, Name, Input } = input as { StateMachineArn: string; Name?: string; Input?: unknown };
          const child = this.start(StateMachineArn, Name, typeof Input === 'string' ? Input : JSON.stringify(Input ?? {}));
          if (service === 'states:startExecution') return { ExecutionArn: child.executionArn, StartDate: child.startDate.toISOString() };
          const done = await this.wait(child.executionArn);
          const description = describeForTask(done, service.endsWith(':2'));
          if (done.status !== 'SUCCEEDED') throw new TaskError('States.TaskFailed', JSON.stringify(description));
          return description;
        };
      case 'events:putEvents':
        return async (input) => {
          const { Entries } = input as { Entries: Parameters<LocalRuntime['putEvents']>[0] };
          const ids = this.putEvents(Entries);
          return { Entries: ids.map((EventId) => ({ EventId })), FailedEntryCount: 0 };
        };
      default:
        throw new Error(`${where}: the local runtime has no binding for ${resource}.`);
    }
  }
}

type TaskHandlers = NonNullable<NonNullable<RunOptions['overrides']>['taskResourceLocalHandlers']>;

interface Bindings {
  handlers: TaskHandlers;
  retryable: string[];
}

/**
 * Calls a handler as Lambda would: the event and the result pass through JSON, and a thrown
 * error becomes the task's error, named after the error, with Lambda's JSON cause.
 */
async function invokeLocal(handler: LocalHandler, event: unknown): Promise<unknown> {
  try {
    const result = await handler(JSON.parse(JSON.stringify(event ?? null)));
    return JSON.parse(JSON.stringify(result ?? null));
  } catch (error) {
    const { name, message } = failureOf(error);
    // The Node.js Lambda runtime's error document, keys in its order.
    throw new TaskError(name, JSON.stringify({ errorType: name, errorMessage: message, trace: [] }));
  }
}

/** The execution that started this one (`associateWithParent`), if any. */
function parentOf(execution: LocalExecution): string | undefined {
  try {
    const input = JSON.parse(execution.input) as { AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID?: unknown };
    return typeof input.AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID === 'string' ? input.AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID : undefined;
  } catch {
    return undefined;
  }
}

/** Visits every state, inside Map and Parallel states too. */
function walk(definition: Record<string, unknown>, visit: (name: string, state: Record<string, unknown>) => void): void {
  const states = (definition.States ?? {}) as Record<string, Record<string, unknown>>;
  for (const [name, state] of Object.entries(states)) {
    visit(name, state);
    const processor = (state.ItemProcessor ?? state.Iterator) as Record<string, unknown> | undefined;
    if (processor) walk(processor, visit);
    for (const branch of (state.Branches ?? []) as Record<string, unknown>[]) walk(branch, visit);
  }
}

/** The error name and message of a failure, unwrapping the interpreter's wrapper. */
function failureOf(error: unknown): { name: string; message: string } {
  let inner = error;
  if (error instanceof ExecutionError && error.cause instanceof Error) inner = error.cause;
  if (inner instanceof Error) return { name: inner.name, message: inner.message };
  return { name: 'Error', message: String(inner) };
}

/** DescribeExecution's answer as a `.sync` task returns it (`.sync:2` parses the output). */
function describeForTask(execution: LocalExecution, parsed: boolean): Record<string, unknown> {
  return {
    ExecutionArn: execution.executionArn,
    StateMachineArn: execution.stateMachineArn,
    Name: execution.name,
    Status: execution.status,
    StartDate: execution.startDate.getTime(),
    StopDate: (execution.stopDate ?? new Date()).getTime(),
    Input: parsed ? JSON.parse(execution.input) : execution.input,
    ...(execution.output !== undefined ? { Output: parsed ? JSON.parse(execution.output) : execution.output } : {}),
    ...(execution.error !== undefined ? { Error: execution.error } : {}),
    ...(execution.cause !== undefined ? { Cause: execution.cause } : {}),
  };
}
