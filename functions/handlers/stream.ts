/**
 * Lambda: the live event stream, behind a function URL in `RESPONSE_STREAM` mode
 * (docs/deploying.md, "The stream URL"). The same Hono app as the API function, its
 * stream routes only, each answer written to the client as the app produces it
 * (`awslambda.streamifyResponse`, through Hono's `streamHandle`).
 */
import { streamHandle } from 'hono/aws-lambda';
import { metricNames } from '../core/telemetry/metrics.js';
import { count, dimensions, flushMetrics, logger } from '../adapters/aws/telemetry.js';
import { createApi } from '../api/app.js';
import { streamRoutesOf } from '../api/stream-routes.js';
import { apiWiring, streamCallers } from '../wiring/api.js';
import { wire } from '../wiring/wire.js';

const wiring = wire(process.env);

// Exported as streamifyResponse returned it: the runtime streams only a handler it marked.
export const handler = streamHandle(
  streamRoutesOf(
    createApi(
      apiWiring(wiring, {
        log: logger,
        authenticate: streamCallers(wiring.env),
        // A stream outlives many metric periods: a run started here (POST /agui) is counted at once.
        onCreated: (run) => {
          dimensions({ mode: run.mode });
          count(metricNames.runsStarted);
          flushMetrics();
        },
      }),
    ),
  ),
);
