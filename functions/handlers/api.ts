/** Lambda: the HTTP API behind API Gateway, the same Hono app `npm run dev` serves. */
import { handle } from 'hono/aws-lambda';
import { metricNames } from '../core/telemetry/metrics.js';
import { count, dimensions, flushMetrics, logger } from '../adapters/aws/telemetry.js';
import { apiWiring } from '../wiring/api.js';
import { schedulerTriggerOf } from '../wiring/schedules.js';
import { wire } from '../wiring/wire.js';
import { createApi } from '../api/app.js';

const wiring = wire(process.env);
const app = handle(
  createApi({
    ...apiWiring(wiring, {
      log: logger,
      onCreated: (run) => {
        dimensions({ mode: run.mode });
        count(metricNames.runsStarted);
      },
    }),
    ...schedulerTriggerOf(wiring.env),
  }),
);

export const handler: typeof app = async (event, context) => {
  try {
    return await app(event, context);
  } finally {
    flushMetrics();
  }
};
