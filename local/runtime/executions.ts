/**
 * Executions: aws-local-stepfunctions interprets each state machine's ASL, and this module keeps
 * what Step Functions would say about each execution (status, output, error, nesting) for
 * `StartExecution`, `DescribeExecution` and `StopExecution`.
 */
import '../polyfills.js';
import { randomUUID } from 'node:crypto';
import { ExecutionAbortedError, ExecutionTimeoutError, StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { localAccount, type LocalStateMachine } from '../definitions.js';
import { localRegion } from '../stand-ins/emulators.js';
import type { Bindings, LocalExecution } from './types.js';
import { ExecutionAlreadyExists, ExecutionDoesNotExist, InvalidName, StateMachineDoesNotExist, failureOf } from './errors.js';
import type { TaskTokens } from './task-tokens.js';

export interface ExecutionsOptions {
  stateMachines: LocalStateMachine[];
  /** The local handlers of a state machine's Tasks, bound once when the machine is loaded. */
  bind(machine: LocalStateMachine): Bindings;
  /** Issues `$$.Task.Token`; the waits of an execution that stops are ended. */
  tokens: TaskTokens;
  /** Milliseconds between retries in place of the definition's backoff (tests); real backoff when absent. */
  retryIntervalMs?: number;
  /** Checks each definition against the ASL schema when it is loaded. @default true */
  validate?: boolean;
  /** Told of each execution that ends ABORTED, FAILED or TIMED_OUT, once, as Step Functions reports them. */
  onEnded?: (execution: LocalExecution) => void;
}

interface Running {
  execution: LocalExecution;
  done: Promise<void>;
  abort: () => void;
}

/** The state machines, interpreted, and every execution started on them. */
export class Executions {
  private readonly machines = new Map<string, { machine: StateMachine; local: LocalStateMachine; bindings: Bindings }>();
  private readonly running = new Map<string, Running>();

  constructor(private readonly options: ExecutionsOptions) {
    for (const local of options.stateMachines) {
      const definition = local.definition as unknown as StateMachineDefinition;
      const noValidate = options.validate === false;
      const machine = new StateMachine(definition, { validationOptions: { checkArn: false, checkPaths: false, noValidate } });
      this.machines.set(local.arn, { machine, local, bindings: options.bind(local) });
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
    const existing = this.running.get(executionArn);
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
    const { tokens, retryIntervalMs } = this.options;
    const issue = () => tokens.issue(executionArn);
    const run = entry.machine.run(JSON.parse(input), {
      overrides: {
        taskResourceLocalHandlers: entry.bindings.handlers,
        ...(retryIntervalMs !== undefined
          ? { retryIntervalOverrides: Object.fromEntries(entry.bindings.retryable.map((s) => [s, retryIntervalMs])) }
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
        } else if (error instanceof ExecutionTimeoutError) {
          // The definition's top-level TimeoutSeconds elapsed.
          execution.status = 'TIMED_OUT';
          execution.error = 'States.Timeout';
          execution.cause = error.message;
        } else {
          const { name, message } = failureOf(error);
          execution.status = 'FAILED';
          execution.error = name;
          execution.cause = message;
        }
        execution.stopDate = new Date();
        this.ended(execution);
      })
      .finally(() => {
        execution.stopDate ??= new Date();
        // A Map that failed leaves its other items' waits behind; their tokens are void now.
        tokens.endWaits(executionArn, 'The execution ended.');
      })
      .then(() => watch.catch(() => undefined));
    this.running.set(executionArn, { execution, done, abort: run.abort });
    return execution;
  }

  describe(executionArn: string): LocalExecution {
    return this.get(executionArn).execution;
  }

  /** Stops an execution and the nested ones it started. Handlers already running finish on their own. */
  stop(executionArn: string, error?: string, cause?: string): LocalExecution {
    const running = this.get(executionArn);
    if (running.execution.status === 'RUNNING') {
      running.execution.status = 'ABORTED';
      running.execution.stopDate = new Date();
      if (error) running.execution.error = error;
      if (cause) running.execution.cause = cause;
      running.abort();
      this.options.tokens.endWaits(executionArn, 'The execution was stopped.');
      this.ended(running.execution);
      for (const child of this.running.values()) {
        if (child.execution.status === 'RUNNING' && parentOf(child.execution) === executionArn) {
          this.stop(child.execution.executionArn, error, cause);
        }
      }
    }
    return running.execution;
  }

  /** Resolves when the execution has stopped. */
  async wait(executionArn: string): Promise<LocalExecution> {
    const running = this.get(executionArn);
    await running.done;
    return running.execution;
  }

  /** Every execution started so far. */
  list(): LocalExecution[] {
    return [...this.running.values()].map((r) => r.execution);
  }

  /** Waits for every running execution to stop. */
  async idle(): Promise<void> {
    await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** The outermost execution of the nesting `executionArn` belongs to. */
  root(executionArn: string): string {
    let root = executionArn;
    for (let parent = this.parent(root); parent; parent = this.parent(root)) root = parent;
    return root;
  }

  /** Reports an execution that ended ABORTED, FAILED or TIMED_OUT; a listener's fault is not the execution's. */
  private ended(execution: LocalExecution): void {
    try {
      this.options.onEnded?.(execution);
    } catch (error) {
      console.error(`Reporting the end of ${execution.executionArn} failed:`, error);
    }
  }

  private parent(executionArn: string): string | undefined {
    const running = this.running.get(executionArn);
    const parent = running && parentOf(running.execution);
    return parent && this.running.has(parent) ? parent : undefined;
  }

  private get(executionArn: string): Running {
    const running = this.running.get(executionArn);
    if (!running) throw new ExecutionDoesNotExist(`Execution ${executionArn} does not exist.`);
    return running;
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
