/** `POST /runs/{runId}/fork`: a new single-mode run from one of a run's user messages. */
import { createRoute } from '@hono/zod-openapi';
import * as z from 'zod';
import { forkBody, forkRun } from '../../core/fork/fork.js';
import { json, jsonBody, noRun, refusal, routes, runParams, withRun } from '../middleware.js';
import { Accepted, IdempotencyKey } from '../schemas.js';
import type { ApiDeps } from '../types.js';

/** The fork route. */
export function forkRoutes(deps: ApiDeps) {
  return routes().openapi(
    createRoute({
      method: 'post',
      path: '/runs/{runId}/fork',
      summary: 'Fork a run: a new single-mode run from one of its user messages',
      description:
        "A new single-mode run of the caller that starts with the source agent's conversation before `fromSeq` (a user message that " +
        'carries no tool results), then `goal`, or the message at `fromSeq` again ("retry from here"); its workspace starts as a ' +
        'copy of the source\'s. The source is not changed. `GET /runs/{runId}` of the fork shows `forkedFrom`.',
      middleware: [withRun('read', deps), jsonBody] as const,
      request: {
        params: runParams,
        headers: z.object({ 'Idempotency-Key': IdempotencyKey.optional() }),
        // The deployment's list of models (STEPWISE_ALLOWED_MODELS) is part of the body's schema.
        body: { required: true, content: json(forkBody(deps)) },
      },
      responses: {
        202: { description: 'The fork was created (or already existed) and is on its way.', content: json(Accepted) },
        400: refusal('Invalid body, or `fromSeq`/`agent` names nothing the source can be forked at; `issues` names the field.'),
        ...noRun,
        409: refusal('The Idempotency-Key was used with another request, or the source is too large to fork (ForkTooLarge).'),
        429: refusal('The caller has as many running runs as the deployment allows.'),
      },
    }),
    async (c) => {
      const key = c.req.valid('header')['Idempotency-Key'];
      const options = { caller: c.var.caller, ...(key === undefined ? {} : { idempotencyKey: key }) };
      return c.json(await forkRun(c.var.run, c.req.valid('json'), deps, options), 202);
    },
  );
}
