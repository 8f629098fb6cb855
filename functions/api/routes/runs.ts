/** Runs: start one, list the caller's, read one, cancel one. */
import { createRoute } from '@hono/zod-openapi';
import * as z from 'zod';
import { RunNotRunning } from '../../core/approvals/types.js';
import { runWithApprovals, summariesWithWaiting } from '../../core/approvals/views.js';
import { holds } from '../../core/callers/access.js';
import { Forbidden } from '../../core/callers/types.js';
import { cancelRun, createRun } from '../../core/intake/create.js';
import { createRunBody } from '../../core/intake/request.js';
import { json, jsonBody, noRun, refusal, routes, runParams, withRun } from '../middleware.js';
import { Accepted, IdempotencyKey, RunView, RunsPage, RunsQuery, Traceparent } from '../schemas.js';
import type { ApiDeps } from '../types.js';

/** `POST /runs`, `GET /runs`, `GET /runs/{runId}` and `POST /runs/{runId}/cancel`. */
export function runRoutes(deps: ApiDeps) {
  return routes()
    .openapi(
      createRoute({
        method: 'post',
        path: '/runs',
        summary: 'Start a run',
        middleware: [jsonBody] as const,
        request: {
          headers: z.object({ 'Idempotency-Key': IdempotencyKey.optional(), traceparent: Traceparent.optional() }),
          // The deployment's list of models (STEPWISE_ALLOWED_MODELS) and its tools are part of the body's schema.
          body: { required: true, content: json(createRunBody(deps)) },
        },
        responses: {
          202: { description: 'Accepted.', content: json(Accepted) },
          400: refusal('Invalid input; `issues` names each bad field.'),
          409: refusal('The Idempotency-Key was used with another body, or the session has a running run.'),
          429: refusal('`TooManyRuns`: the caller has as many runs running as the deployment allows; `BudgetExceeded`: its daily budget is spent.'),
        },
      }),
      async (c) => {
        const { 'Idempotency-Key': key, traceparent } = c.req.valid('header');
        const caller = c.var.caller;
        const options = { caller, ...(key === undefined ? {} : { idempotencyKey: key }), ...(traceparent === undefined ? {} : { traceparent }) };
        return c.json(await createRun(c.req.valid('json'), deps, options), 202);
      },
    )
    .openapi(
      createRoute({
        method: 'get',
        path: '/runs',
        summary: "The caller's runs (or, for reviewers and admins, their tenant's), newest first",
        request: { query: RunsQuery },
        responses: {
          200: { description: 'One page of runs.', content: json(RunsPage) },
          400: refusal('Invalid query or cursor.'),
          403: refusal('`scope=tenant` needs the approve or admin role.'),
        },
      }),
      async (c) => {
        const caller = c.var.caller;
        const { status, limit, cursor, scope } = c.req.valid('query');
        if (scope === 'tenant' && !holds(caller, 'approve')) throw new Forbidden('Listing a tenant\'s runs needs the approve or admin role.');
        const page = await deps.runs.list({
          scope: scope === 'tenant' ? { tenant: caller.tenant } : { owner: caller },
          ...(status ? { status } : {}),
          limit,
          ...(cursor ? { cursor } : {}),
        });
        const items = await summariesWithWaiting(page.items, deps.approvals);
        return c.json({ items, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) }, 200);
      },
    )
    .openapi(
      createRoute({
        method: 'get',
        path: '/runs/{runId}',
        summary: 'A run',
        middleware: [withRun('read', deps)] as const,
        request: { params: runParams },
        responses: { 200: { description: 'The run.', content: json(RunView) }, ...noRun },
      }),
      async (c) => c.json((await runWithApprovals(c.var.run, deps.approvals)) satisfies RunView, 200),
    )
    .openapi(
      createRoute({
        method: 'post',
        path: '/runs/{runId}/cancel',
        summary: 'Cancel a running run',
        middleware: [withRun('cancel', deps)] as const,
        request: { params: runParams },
        responses: {
          202: { description: 'Cancelled.', content: json(Accepted) },
          403: refusal('A reviewer may see the run but only its owner or an admin may cancel it.'),
          409: refusal('The run is not running.'),
          ...noRun,
        },
      }),
      async (c) => {
        const run = c.var.run;
        if (!(await cancelRun(run.runId, deps))) {
          throw new RunNotRunning(`Run ${run.runId} is ${run.status}; only a running run can be cancelled.`);
        }
        return c.json({ runId: run.runId, status: 'cancelled', phase: 'cancelled' } as const, 202);
      },
    );
}
