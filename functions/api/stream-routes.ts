/**
 * The routes that answer with a live event stream (docs/deploying.md, "The stream
 * URL"). API Gateway's HTTP API cannot stream a response, so deployed these routes are served
 * by the stream function's URL (Lambda response streaming), and only there; the HTTP API serves
 * every other route. Locally one server serves them all.
 */
import { type Env, Hono } from 'hono';
import type { ErrorBody } from './schemas.js';

/** The stream routes, as the app declares them (OpenAPI path syntax). */
export const streamRoutes = [
  ['GET', '/runs/{runId}/events'],
  ['POST', '/agui'],
  // The A2A JSON-RPC interface: its streaming methods stream, and the card names this URL for all of them (docs/a2a.md).
  ['POST', '/a2a'],
] as const satisfies readonly (readonly ['GET' | 'POST', string])[];

/**
 * The stream routes of `app` and nothing else: what the stream function serves. Any other request
 * is answered 404 before anything is read, so the function needs, and has, the grants of these
 * routes only (the HTTP API's per-route permissions and throttle do not reach a function URL).
 * The request, its Lambda event and its body go to `app` untouched, and its answer comes back as
 * it streams.
 */
export function streamRoutesOf<E extends Env>(app: Hono<E>): Hono<E> {
  const gate = new Hono<E>();
  for (const [method, path] of streamRoutes) {
    gate.on(method, path.replace(/\{(\w+)\}/g, ':$1'), (c) => app.fetch(c.req.raw, c.env));
  }
  const served = streamRoutes.map(([method, path]) => `${method} ${path}`).join(', ');
  gate.notFound((c) =>
    c.json(
      { error: { code: 'NotFound', message: `No route ${c.req.method} ${c.req.path} here: this URL serves ${served}; the HTTP API serves the rest.` } } satisfies ErrorBody,
      404,
    ),
  );
  return gate;
}
