/**
 * What the API's sub-apps share: who is calling (`withCaller`), the run a path names, loaded and
 * checked for what the caller wants to do with it (`withRun`), the JSON body check (`jsonBody`),
 * and the parts every route declaration uses (`routes`, `json`, `refusal`).
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Env } from 'hono';
import { createMiddleware } from 'hono/factory';
import * as z from 'zod';
import { accessTo, holds } from '../core/callers/access.js';
import { type Access, type AccessPolicy, type Caller, Forbidden } from '../core/callers/types.js';
import type { Run, RunStore } from '../core/runs/types.js';
import type { Authenticate } from './callers.js';
import { InvalidJson, RunNotFound, UnsupportedMediaType, ValidationFailed, refuseInvalid } from './errors.js';
import { ErrorBody, RunId } from './schemas.js';

/** What a request carries through the app: its caller (set on every route under /runs, and /agui). */
export type ApiEnv = { Variables: { caller: Caller } };

/** A sub-app: its routes declared with their schemas, a request part that fails one refused as `ValidationFailed`. */
export function routes(): OpenAPIHono<ApiEnv> {
  return new OpenAPIHono<ApiEnv>({ defaultHook: refuseInvalid });
}

/** A JSON content of a request or an answer, as a route declares it. */
export const json = <T extends z.ZodType>(schema: T) => ({ 'application/json': { schema } });

/** An error answer, as a route declares it. */
export const refusal = (description: string) => ({ description, content: json(ErrorBody) });

/** The answer of every route of a run that the caller may not see, or that does not exist. */
export const noRun = { 404: refusal('No such run.') };

/** The path parameters of a run's routes. */
export const runParams = z.object({ runId: RunId });

/** Reads the caller of the request, once, for the routes after it. */
export function withCaller(deps: { authenticate: Authenticate }) {
  return createMiddleware<ApiEnv>(async (c, next) => {
    const env: unknown = c.env;
    const lambdaEvent = typeof env === 'object' && env !== null && 'event' in env ? env.event : undefined;
    c.set('caller', await deps.authenticate({ authorization: c.req.header('authorization'), lambdaEvent }));
    await next();
  });
}

/** What `withRun` reads: the runs, and the deployment's settings of who may do what. */
export interface RunAccessDeps {
  runs: RunStore;
  access?: AccessPolicy;
}

/**
 * Loads the run a path names before anything else is checked, for what the caller wants to do
 * with it. A run the caller may not see is answered exactly as a missing one (404), so nobody
 * learns that someone else's run exists; a run it sees but may not act on is a 403.
 */
export function withRun(access: Access, deps: RunAccessDeps) {
  return createMiddleware<{ Variables: { run: Run; caller: Caller } }>(async (c, next) => {
    const runId = c.req.param('runId') ?? '';
    const valid = RunId.safeParse(runId);
    if (!valid.success) {
      throw new ValidationFailed('The path parameter runId is invalid.', [{ path: 'runId', message: valid.error.issues[0]?.message ?? 'invalid' }]);
    }
    const run = await deps.runs.get(runId);
    const verdict = run ? accessTo(c.var.caller, run.owner, access, deps.access) : 'hidden';
    if (!run || verdict === 'hidden') throw new RunNotFound(`No run ${runId}.`);
    if (verdict === 'forbidden') throw new Forbidden(forbiddenMessage(access, run, c.var.caller, deps.access));
    c.set('run', run);
    await next();
  });
}

/** Why a caller that sees a run may not do this with it. */
function forbiddenMessage(access: Access, run: Run, caller: Caller, policy: AccessPolicy = {}): string {
  if (access === 'cancel') return `Only the owner of run ${run.runId} or an admin may cancel it.`;
  if (!holds(caller, 'approve')) return 'Deciding tool calls needs the approve role.';
  return policy.separateReviewer ? `Run ${run.runId} is yours; another reviewer must decide its calls.` : 'Not allowed.';
}

/**
 * Refuses a body that is not JSON, by its type or its text, before the route's schema sees it:
 * those refusals have codes of their own (`UnsupportedMediaType`, `InvalidJson`). The body is
 * parsed once; the schema's validator reads the parsed value. (Typed with the plain `Env` so that
 * a route's middleware list still gives its handler `c.var.run`.)
 */
export const jsonBody = createMiddleware<Env>(async (c, next) => {
  const type = c.req.header('content-type');
  if (!/^application\/json\b/i.test(type ?? '')) throw new UnsupportedMediaType(type);
  try {
    await c.req.json();
  } catch {
    throw new InvalidJson();
  }
  await next();
});
