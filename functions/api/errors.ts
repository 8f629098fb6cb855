/**
 * How the HTTP API refuses: every error answers `{ error: { code, message, issues? } }` with its
 * status, whether a route's schema, the router or the core refused the request.
 */
import type { Context, ValidationTargets } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type * as z from 'zod';
import { ApprovalAlreadyDecided, ApprovalNotFound, InvalidEditedInput, RunNotRunning } from '../core/approvals/types.js';
import { BudgetExceeded } from '../core/budgets/types.js';
import { Forbidden, TooManyRuns, Unauthenticated } from '../core/callers/types.js';
import { StepwiseError } from '../core/errors/errors.js';
import { ForkTooLarge, InvalidFork } from '../core/fork/types.js';
import { IdempotencyConflict, RunIdTaken, SessionBusy } from '../core/intake/types.js';
import { InvalidCursor } from '../core/runs/types.js';
import type { ErrorBody } from './schemas.js';

/** One thing wrong with a request: where (a body field, a header, a parameter) and what. */
export interface Issue {
  path: string;
  message: string;
}

/** An error the API answers with its own status. */
export class ApiError extends StepwiseError {
  override readonly name = 'ApiError';
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly issues?: Issue[],
  ) {
    super(message);
  }
}

/** The one thing the API logs: an error it did not expect, answered with a 500. */
export interface ErrorLog {
  error(message: string, error: Error): void;
}

/** How a refusal names each part of a request, and an issue about that part as a whole. */
const parts: Record<keyof ValidationTargets, { whole: string; invalid(names: string): string }> = {
  json: { whole: '(body)', invalid: () => 'The body is invalid.' },
  form: { whole: '(form)', invalid: () => 'The form is invalid.' },
  query: { whole: '(query)', invalid: () => 'The query is invalid.' },
  param: { whole: '(path)', invalid: (names) => `The path parameter ${names} is invalid.` },
  header: { whole: '(headers)', invalid: (names) => `The ${names} header is invalid.` },
  cookie: { whole: '(cookies)', invalid: (names) => `The ${names} cookie is invalid.` },
};

/**
 * The routes' `defaultHook`: a request part that fails its schema is refused with a 400 naming
 * every bad field (headers by the name the route declares, e.g. `Idempotency-Key`).
 */
export function refuseInvalid(result: { target: keyof ValidationTargets } & ({ success: true } | { success: false; error: z.ZodError })): void {
  if (result.success) return;
  const part = parts[result.target];
  const issues = result.error.issues.map((i) => ({ path: i.path.join('.') || part.whole, message: i.message }));
  throw new ApiError(400, 'ValidationFailed', part.invalid([...new Set(issues.map((i) => i.path))].join(', ')), issues);
}

/** A body sent as anything but JSON. */
export function unsupportedMediaType(type: string | undefined): ApiError {
  return new ApiError(400, 'UnsupportedMediaType', 'Send the body as JSON with "Content-Type: application/json".', [
    { path: 'Content-Type', message: `must be application/json, not "${type || '(none)'}"` },
  ]);
}

/** A JSON body that does not parse. */
export function invalidJson(): ApiError {
  return new ApiError(400, 'InvalidJson', 'The body is not valid JSON.', [{ path: '(body)', message: 'is not valid JSON' }]);
}

/** The HTTP status of each error the core names for a client's mistake. */
const clientErrors: [new (...args: never[]) => StepwiseError, ContentfulStatusCode][] = [
  [IdempotencyConflict, 409],
  [SessionBusy, 409],
  [ApprovalAlreadyDecided, 409],
  [RunNotRunning, 409],
  [ApprovalNotFound, 404],
  [RunIdTaken, 409],
  [ForkTooLarge, 409],
  [InvalidCursor, 400],
  [Unauthenticated, 401],
  [Forbidden, 403],
  [TooManyRuns, 429],
  [BudgetExceeded, 429],
];

/** The app's `onError`: a known error answers with its status; anything else is logged and answers 500. */
export function answerError(log: ErrorLog | undefined) {
  return (error: Error, c: Context): Response => {
    // The router's own media-type check, for the odd JSON types the routes' check lets through.
    const known = error instanceof HTTPException && error.status === 415 ? unsupportedMediaType(c.req.header('content-type')) : error;
    if (known instanceof ApiError) {
      const body: ErrorBody = { error: { code: known.code, message: known.message, ...(known.issues ? { issues: known.issues } : {}) } };
      return c.json(body, known.status);
    }
    // An edited input that does not fit its tool is refused like a body that fails its schema, naming the fields.
    if (known instanceof InvalidEditedInput) {
      const body: ErrorBody = { error: { code: 'ValidationFailed', message: 'The body is invalid.', issues: known.issues } };
      return c.json(body, 400);
    }
    // A fork that names what its source lacks is refused like a body that fails its schema, naming the field.
    if (known instanceof InvalidFork) {
      const body: ErrorBody = { error: { code: 'ValidationFailed', message: 'The body is invalid.', issues: [{ path: known.field, message: known.problem }] } };
      return c.json(body, 400);
    }
    const status = clientErrors.find(([type]) => known instanceof type)?.[1];
    if (status) return c.json({ error: { code: known.name, message: known.message } } satisfies ErrorBody, status);
    // A value from the request that the store refuses (a key too long, say) is the client's mistake, not ours.
    if (known.name === 'ValidationException') {
      return c.json({ error: { code: 'ValidationFailed', message: 'The request names something this API cannot look up or store.' } } satisfies ErrorBody, 400);
    }
    if (log) log.error('Unhandled API error', known);
    else console.error(JSON.stringify({ level: 'error', message: 'Unhandled API error', error: String(known) }));
    return c.json({ error: { code: 'InternalError', message: 'Something went wrong on our side.' } } satisfies ErrorBody, 500);
  };
}
