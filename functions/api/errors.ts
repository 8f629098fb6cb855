/**
 * How the HTTP API refuses: every error answers `{ error: { code, message, issues? } }` with its
 * status, whether a route's schema, the router or the core refused the request.
 */
import type { Context, ValidationTargets } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type * as z from 'zod';
import { type Issue, StepwiseError, named } from '../core/errors/errors.js';
import type { ErrorBody } from './schemas.js';

export type { Issue };

/** A request part failed its schema; `issues` names each bad field. */
export class ValidationFailed extends named('ValidationFailed') {
  constructor(
    message: string,
    override readonly issues: Issue[],
  ) {
    super(message);
  }
}

/** A body sent as anything but JSON. */
export class UnsupportedMediaType extends named('UnsupportedMediaType') {
  override readonly issues: Issue[];
  constructor(type: string | undefined) {
    super('Send the body as JSON with "Content-Type: application/json".');
    this.issues = [{ path: 'Content-Type', message: `must be application/json, not "${type || '(none)'}"` }];
  }
}

/** A JSON body that does not parse. */
export class InvalidJson extends named('InvalidJson') {
  override readonly issues: Issue[] = [{ path: '(body)', message: 'is not valid JSON' }];
  constructor() {
    super('The body is not valid JSON.');
  }
}

/** No run with that id that the caller may see: the same answer as a missing run (docs/callers-and-security.md, "Callers and owners"). */
export class RunNotFound extends named('RunNotFound') {}

/** No file at that path of the run's workspace. */
export class FileNotFound extends named('FileNotFound') {}

/** A workspace path the route cannot use. */
export class InvalidPath extends named('InvalidPath') {}

/** A route this deployment does not serve. */
export class NotImplemented extends named('NotImplemented') {}

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
  throw new ValidationFailed(part.invalid([...new Set(issues.map((i) => i.path))].join(', ')), issues);
}

/** How long a caller is told to wait before sending again a request that met a transient fault. */
export const retryAfterSeconds = 5;

/** The app's `onError`: an error of the family with a status of its own (not 500) answers with its status and code; anything else is logged and answers 500. */
export function answerError(log: ErrorLog | undefined) {
  return (error: Error, c: Context): Response => {
    // The router's own media-type check, for the odd JSON types the routes' check lets through.
    const known = error instanceof HTTPException && error.status === 415 ? new UnsupportedMediaType(c.req.header('content-type')) : error;
    if (known instanceof StepwiseError && known.status !== 500) {
      const issues = known.issues;
      // An error refused like a body that fails its schema (an edited input, a fork) says so, not which check found it.
      const message = known.code === 'ValidationFailed' && known.name !== 'ValidationFailed' ? 'The body is invalid.' : known.message;
      const body: ErrorBody = { error: { code: known.code, message, ...(issues ? { issues } : {}) } };
      return c.json(body, known.status as ContentfulStatusCode);
    }
    // A value from the request that the store refuses (a key too long, say) is the client's mistake, not ours.
    if (known.name === 'ValidationException') {
      return c.json({ error: { code: 'ValidationFailed', message: 'The request names something this API cannot look up or store.' } } satisfies ErrorBody, 400);
    }
    // A service below the API that is busy or away for a moment (a throttled start, a store that
    // throttles): the request may well succeed if sent again, so it says so (503, Retry-After)
    // rather than blaming itself. The cause stays in the log, not in the answer.
    if (known instanceof StepwiseError && known.transient) {
      if (log) log.error('API request met a transient fault', known);
      c.header('Retry-After', String(retryAfterSeconds));
      return c.json({ error: { code: 'ServiceUnavailable', message: 'Stepwise cannot take this request right now; send it again shortly.' } } satisfies ErrorBody, 503);
    }
    if (log) log.error('Unhandled API error', known);
    else console.error(JSON.stringify({ level: 'error', message: 'Unhandled API error', error: String(known) }));
    return c.json({ error: { code: 'InternalError', message: 'Something went wrong on our side.' } } satisfies ErrorBody, 500);
  };
}
