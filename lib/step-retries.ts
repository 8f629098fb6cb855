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

/** Lambda's own transient faults (the service, not the function). */
export const lambdaServiceErrors = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.TooManyRequestsException',
  'Lambda.Unknown',
];

/**
 * Errors whose names say where a step failed (Lambda's service, a timeout) but not why: retried
 * by `addRetries`, so reaching the `Catch` means the retries are spent. The run fails with
 * `RetriesExhausted`, naming the error and its cause, rather than with an opaque name.
 */
export const exhaustibleErrors = [...lambdaServiceErrors, 'States.Timeout', 'Sandbox.Timedout'];

/**
 * One retry policy (docs/reliability.md, "Retries"): backoff with full jitter, in the state machine only.
 * `timeouts: false` leaves the state's own timeout alone (a wait for a person), still retrying
 * a Lambda that timed out.
 */
export function addRetries(task: sfn.TaskStateBase, options: { timeouts?: boolean } = {}): void {
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
