/**
 * The local server's own routes (`npm run dev` only, never in a Lambda bundle): the local token
 * issuer (`POST /_local/tokens`) and the local event bus (`/_local/events`, `/_local/dead-letters`).
 * Declared like the API's routes, so their bodies are checked the same way, and hidden from its
 * OpenAPI document.
 */
import { createRoute } from '@hono/zod-openapi';
import * as z from 'zod';
import { json, jsonBody, routes } from '../functions/api/middleware.js';
import { TokenRequest } from '../functions/core/callers/types.js';

/** A PutEvents entry as `POST /_local/events` takes it. */
export const LocalPutEntry = z.object({
  Source: z.string().min(1),
  DetailType: z.string().min(1),
  Detail: z.union([z.string(), z.record(z.string(), z.unknown())]),
  EventBusName: z.string().optional(),
});
export type LocalPutEntry = z.infer<typeof LocalPutEntry>;

/** The local token issuer, as `POST /_local/tokens` hands out its tokens. */
export interface LocalTokens {
  issue(request: TokenRequest): Promise<string>;
}

/** The local event bus, as the `/_local/events` and `/_local/dead-letters` routes read and write it. */
export interface LocalBus {
  put(entry: LocalPutEntry): Promise<unknown>;
  list(): unknown[];
  /** Events the intake refused, with the reasons. */
  deadLetters(): unknown[];
}

/** `POST /_local/tokens`, for the local server to mount on the API. */
export function localTokenRoutes(issuer: LocalTokens) {
  return routes().openapi(
    createRoute({
      method: 'post',
      path: '/_local/tokens',
      hide: true,
      middleware: [jsonBody] as const,
      request: { body: { required: true, content: json(TokenRequest) } },
      responses: { 200: { description: 'A token of the local issuer.', content: json(z.object({ token: z.string() })) } },
    }),
    async (c) => c.json({ token: await issuer.issue(c.req.valid('json')) }, 200),
  );
}

/** The token route as types, for a typed client of it (`stepwise token`). */
export type LocalTokenRoutes = ReturnType<typeof localTokenRoutes>;

/** The local event bus's routes, for the local server to mount on the API. */
export function localEventRoutes(bus: LocalBus) {
  return routes()
    .openapi(
      createRoute({
        method: 'post',
        path: '/_local/events',
        hide: true,
        middleware: [jsonBody] as const,
        request: { body: { required: true, content: json(LocalPutEntry) } },
        responses: { 200: { description: 'The PutEvents answer.' } },
      }),
      async (c) => c.json(await bus.put(c.req.valid('json')), 200),
    )
    .openapi(
      createRoute({ method: 'get', path: '/_local/events', hide: true, responses: { 200: { description: 'The events put on the bus.' } } }),
      (c) => c.json({ items: bus.list() }, 200),
    )
    .openapi(
      createRoute({ method: 'get', path: '/_local/dead-letters', hide: true, responses: { 200: { description: 'The events the intake refused.' } } }),
      (c) => c.json({ items: bus.deadLetters() }, 200),
    );
}
