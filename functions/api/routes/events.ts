/** `GET /runs/{runId}/events`: a run's events as they happen, AG-UI over server-sent events, resumable. */
import { createRoute } from '@hono/zod-openapi';
import { noRun, refusal, routes, runParams, withRun } from '../middleware.js';
import { EventsHeaders, EventsQuery, answerStream, eventStream } from '../stream.js';
import type { ApiDeps } from '../types.js';

/** The event stream route. */
export function eventRoutes(deps: ApiDeps) {
  return routes().openapi(
    createRoute({
      method: 'get',
      path: '/runs/{runId}/events',
      summary: "The run's events as they happen (AG-UI over server-sent events), resumable",
      description:
        'Replays the run from its start (or after `Last-Event-ID` / `?after=`), then follows it live, and ends after RUN_FINISHED or RUN_ERROR. ' +
        'Every watcher and every reconnect sees the same events with the same ids.',
      middleware: [withRun('read', deps)] as const,
      request: { params: runParams, query: EventsQuery, headers: EventsHeaders },
      responses: {
        200: eventStream,
        204: { description: 'The run has ended and no event follows the cursor.' },
        400: refusal('A cursor that this run\'s stream did not give (`InvalidCursor`).'),
        ...noRun,
      },
    }),
    async (c) => answerStream(c, c.var.run, c.req.valid('header')['Last-Event-ID'] ?? c.req.valid('query').after, deps),
  );
}
