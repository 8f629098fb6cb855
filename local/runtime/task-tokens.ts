/**
 * Task tokens for `.waitForTaskToken`: a token is issued each time a state's parameters read
 * `$$.Task.Token`, claimed by the task whose input carries it, and waited on until
 * `SendTaskSuccess` / `SendTaskFailure` answers, the heartbeat or the state's timeout passes, or
 * the execution ends.
 */
import { randomBytes } from 'node:crypto';
import { InvalidOutput, InvalidToken, TaskError, TaskTimedOut } from './errors.js';

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

/** The timing a `.waitForTaskToken` state declares. */
export interface WaitTiming {
  TimeoutSeconds?: unknown;
  HeartbeatSeconds?: unknown;
}

/** The registry of issued tokens and of the tasks waiting on them. */
export class TaskTokens {
  /** Tokens handed out through `$$.Task.Token` and not yet waited on, with their execution. */
  private readonly issued = new Map<string, string>();
  private readonly waits = new Map<string, TokenWait>();

  /** A fresh token for a task of `executionArn`. */
  issue(executionArn: string): string {
    const token = `AQ${randomBytes(72).toString('base64url')}`;
    this.issued.set(token, executionArn);
    return token;
  }

  /** The token a task's input carries (wherever its parameters put it), taken off the issued list. */
  claim(input: unknown): { token: string; executionArn: string } | undefined {
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
  waitOn(token: string, executionArn: string, state: WaitTiming): Promise<unknown> {
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

  /** `SendTaskSuccess`: the waiting task succeeds with `output` (a JSON text). */
  succeed(token: string, output: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(output);
    } catch {
      throw new InvalidOutput('The output is not valid JSON.');
    }
    this.take(token).resolve(parsed);
  }

  /** `SendTaskFailure`: the waiting task fails with `error` and `cause`. */
  fail(token: string, error?: string, cause?: string): void {
    this.take(token).reject(new TaskError(error || 'States.TaskFailed', cause ?? ''));
  }

  /** `SendTaskHeartbeat`: the waiting task's heartbeat clock starts again. */
  heartbeat(token: string): void {
    this.take(token).beat();
  }

  /** Ends a wait with `error`, if it still waits (the task's own function failed). */
  abort(token: string, error: Error): void {
    this.waits.get(token)?.reject(error);
  }

  /** The tokens being waited on, with their executions. */
  waiting(): { token: string; executionArn: string }[] {
    return [...this.waits.entries()].map(([token, w]) => ({ token, executionArn: w.executionArn }));
  }

  /** Ends the waits of a stopped execution with `States.Aborted`. */
  endWaits(executionArn: string, cause: string): void {
    for (const [token, wait] of this.waits) {
      if (wait.executionArn === executionArn) wait.reject(new TaskError('States.Aborted', `${cause} (${token.slice(0, 8)}…)`));
    }
  }

  private take(token: string): TokenWait {
    const wait = this.waits.get(token);
    if (wait) return wait;
    throw tokenPattern.test(token)
      ? new TaskTimedOut('The task no longer waits on this token: it timed out, was answered, or its execution stopped.')
      : new InvalidToken('The task token is not valid.');
  }
}
