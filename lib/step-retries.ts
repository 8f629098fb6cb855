/**
 * The state machines' one retry policy (docs/reliability.md, "Retries"): which errors of a step are
 * retried, with what backoff, and which ones mean the retries are spent.
 */
import { Duration } from 'aws-cdk-lib';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { transientErrorNames } from '../functions/core/errors/table.js';

/**
 * Errors a step throws that are worth retrying: the model's, the stores' and external tools'
 * transient faults, as the error table marks them. `OrchestratorUnavailable` is left out: only
 * the API and the intake start executions, and their callers repeat the request.
 */
export const transientStepErrors = transientErrorNames().filter((name) => name !== 'OrchestratorUnavailable');

/**
 * Lambda refusing an invoke for want of concurrency (the account's, or a function's reserved):
 * backpressure, not a fault. Retried longer than a fault (`addRetries`), so a burst past the
 * account's concurrency slows runs down instead of failing them (docs/SCALE.md, "Backpressure").
 */
export const lambdaThrottleErrors = ['Lambda.TooManyRequestsException'];

/** Lambda's own transient faults (the service, not the function). */
export const lambdaServiceErrors = ['Lambda.ServiceException', 'Lambda.AWSLambdaException', 'Lambda.SdkClientException', 'Lambda.Unknown'];

/**
 * A nested execution that could not start for now (`startExecution.sync:2`: an agent called as a
 * tool, a continuation): the account's open executions at their quota, the StartExecution token
 * bucket empty (a throttle, reported by the integration as the service's base exception; that
 * name is not confirmed on an AWS page), or the SDK's own fault.
 */
export const startExecutionFaults = ['StepFunctions.ExecutionLimitExceededException', 'StepFunctions.AWSStepFunctionsException', 'StepFunctions.SdkClientException'];

/**
 * Errors whose names say where a step failed (Lambda's service, a timeout) but not why: retried
 * by `addRetries`, so reaching the `Catch` means the retries are spent. The run fails with
 * `RetriesExhausted`, naming the error and its cause, rather than with an opaque name.
 */
export const exhaustibleErrors = [...lambdaThrottleErrors, ...lambdaServiceErrors, 'States.Timeout', 'Sandbox.Timedout'];

/**
 * One retry policy (docs/reliability.md, "Retries"): backoff with full jitter, in the state machine only.
 * `timeouts: false` leaves the state's own timeout alone (a wait for a person), still retrying
 * a Lambda that timed out.
 */
export function addRetries(task: sfn.TaskStateBase, options: { timeouts?: boolean } = {}): void {
  // Backpressure: up to about three minutes of jittered waits (1, 2, 4 … capped at 30 s; 8 retries)
  // while Lambda's concurrency scales or frees up.
  task.addRetry({
    errors: lambdaThrottleErrors,
    interval: Duration.seconds(1),
    maxAttempts: 8,
    backoffRate: 2,
    maxDelay: Duration.seconds(30),
    jitterStrategy: sfn.JitterType.FULL,
  });
  task.addRetry({
    errors: lambdaServiceErrors,
    interval: Duration.seconds(1),
    maxAttempts: 4,
    backoffRate: 2,
    jitterStrategy: sfn.JitterType.FULL,
  });
  task.addRetry({
    errors: transientStepErrors,
    interval: Duration.seconds(2),
    maxAttempts: 6,
    backoffRate: 2,
    maxDelay: Duration.seconds(60),
    jitterStrategy: sfn.JitterType.FULL,
  });
  task.addRetry({
    // A step that outran its budget (the state's timeout, or the Lambda's own).
    errors: options.timeouts === false ? ['Sandbox.Timedout'] : ['States.Timeout', 'Sandbox.Timedout'],
    interval: Duration.seconds(2),
    maxAttempts: 2,
    backoffRate: 2,
    jitterStrategy: sfn.JitterType.FULL,
  });
}

/** The same backoff with full jitter for a nested execution's start (`startExecution.sync:2`), kept from failing on a momentary quota. */
export function addStartRetries(state: sfn.CustomState): void {
  state.addRetry({
    errors: startExecutionFaults,
    interval: Duration.seconds(1),
    maxAttempts: 8,
    backoffRate: 2,
    maxDelay: Duration.seconds(30),
    jitterStrategy: sfn.JitterType.FULL,
  });
}
