/** `GET /health`: whether the server is up (the local server; deployed, API Gateway does not route it). */
import { createRoute } from '@hono/zod-openapi';
import { json, routes } from '../middleware.js';
import { Health } from '../schemas.js';

/** The liveness route. */
export function healthRoutes() {
  return routes().openapi(
    createRoute({ method: 'get', path: '/health', summary: 'Liveness (local server)', responses: { 200: { description: 'Up.', content: json(Health) } } }),
    (c) => c.json({ ok: true } as const, 200),
  );
}
