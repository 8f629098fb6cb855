/**
 * `GET /runs/{runId}/events`: a run's events as they happen, AG-UI over server-sent events,
 * resumable; `GET /runs/{runId}/events/page`: the same events, as far as they are stored, as JSON.
 */
import { createRoute } from '@hono/zod-openapi';
import { json, noRun, refusal, routes, runParams, withRun } from '../middleware.js';
import { EventsHeaders, EventsPage, EventsQuery, answerStream, eventStream, eventsPage } from '../stream.js';
import type { ApiDeps } from '../types.js';

/** The event stream route, and its page for clients that poll. */
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
        429: refusal('The caller has as many streams open as the deployment allows (`TooManyStreams`).'),
      },
    }),
    async (c) => answerStream(c, c.var.run, c.req.valid('header')['Last-Event-ID'] ?? c.req.valid('query').after, deps, { owner: c.var.caller }),
  )
    .openapi(
      createRoute({
        method: 'get',
        path: '/runs/{runId}/events/page',
        summary: "The run's events so far, as one JSON page: the stream's events and ids, for clients that poll",
        description:
          'What `GET /runs/{runId}/events` would send after `?after=` up to now, without waiting for more: the same events with the same ids, derived ' +
          'the same way. Poll with the last id to go on; `done` says the run has ended and its last event was given.',
        middleware: [withRun('read', deps)] as const,
        request: { params: runParams, query: EventsQuery },
        responses: {
          200: { description: 'The events after the cursor, as far as they are stored.', content: json(EventsPage) },
          400: refusal('A cursor that this run\'s stream did not give (`InvalidCursor`).'),
          ...noRun,
        },
      }),
      async (c) => c.json(await eventsPage(c.var.run, c.req.valid('query').after, deps), 200),
    );
}
