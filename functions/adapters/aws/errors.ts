/**
 * Which AWS SDK errors are transient: throttling, 5xx and dropped connections. The SDK has
 * already retried these a few times; what is left is for the state machine's `Retry`.
 */
import { named } from '../../core/errors/errors.js';

const throttlingNames = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'Throttling',
  'RequestLimitExceeded',
  'SlowDown',
  'TooManyRequestsException',
  'ServiceUnavailable',
  'InternalServerError',
  'InternalError',
  'RequestTimeout',
  'TimeoutError',
]);

const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND']);

interface AwsLikeError {
  name?: string;
  code?: string;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/** Whether an AWS SDK error is worth retrying later. */
export function isTransientAwsError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as AwsLikeError;
  if (e.name && throttlingNames.has(e.name)) return true;
  if (e.code && networkCodes.has(e.code)) return true;
  if (e.$retryable) return true;
  const status = e.$metadata?.httpStatusCode;
  return status !== undefined && status >= 500;
}

/** The store behind memory or run records failed transiently; retried by the state machine. */
export class StoreUnavailable extends named('StoreUnavailable') {}

/** Runs an AWS call, turning transient failures into `wrap`'s named error. */
export async function guard<T>(
  what: string,
  call: () => Promise<T>,
  wrap: new (message: string, options?: { cause?: unknown }) => Error = StoreUnavailable,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isTransientAwsError(error)) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new wrap(`${what} failed after retries (${reason}).`, { cause: error });
    }
    throw error;
  }
}

/** Whether the error is DynamoDB's answer to a failed condition. */
export function isConditionFailed(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}
