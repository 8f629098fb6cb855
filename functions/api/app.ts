/**
 * The HTTP API (docs/http-api.md) as one Hono app: the same app behind API Gateway and in
 * `npm run dev`. It mounts one small sub-app per resource (`routes/`), each declaring its routes
 * once, with the schemas that validate the request and describe the answers; `GET /openapi.json`
 * is generated from those declarations, and the app's type gives the CLI and the console their
 * typed client (`client.ts`). Handlers are thin: read the validated request, call the core, map
 * the answer or a typed error.
 */
import type { OpenAPIHono } from '@hono/zod-openapi';
import { a2aRoutes } from './a2a/routes.js';
import { answerError } from './errors.js';
import { type ApiEnv, routes, withCaller } from './middleware.js';
import { mcpRoutes } from './mcp.js';
import { agentRoutes } from './routes/agents.js';
import { aguiRoutes } from './routes/agui.js';
import { approvalRoutes } from './routes/approvals.js';
import { evalRoutes } from './routes/evals.js';
import { eventRoutes } from './routes/events.js';
import { fileRoutes } from './routes/files.js';
import { forkRoutes } from './routes/fork.js';
import { healthRoutes } from './routes/health.js';
import { memoryRoutes } from './routes/memories.js';
import { messageRoutes } from './routes/messages.js';
import { openApiRoutes } from './routes/openapi.js';
import { runRoutes } from './routes/runs.js';
import { scheduleRoutes } from './routes/schedules.js';
import type { ErrorBody } from './schemas.js';
import type { ApiDeps } from './types.js';

export type { ApiDeps } from './types.js';
export type { ApiEnv } from './middleware.js';
export { maxFileResponseBytes } from './routes/files.js';

/** The app on its dependencies, its sub-apps mounted; `GET /openapi.json` serves their document. */
export function createApi(deps: ApiDeps) {
  const app: OpenAPIHono<ApiEnv> = routes();
  app.onError(answerError(deps.log));
  app.notFound((c) => c.json({ error: { code: 'NotFound', message: `No route ${c.req.method} ${c.req.path}.` } } satisfies ErrorBody, 404));
  // The caller is read once per request, before any route of a run looks at the run.
  const caller = withCaller(deps);
  app.use('/runs', caller);
  app.use('/runs/*', caller);
  app.use('/agui', caller);
  app.use('/agents', caller);
  app.use('/a2a', caller);
  app.use('/schedules', caller);
  app.use('/schedules/*', caller);
  app.use('/mcp', caller);
  app.use('/memories', caller);
  app.use('/memories/*', caller);
  app.use('/evals', caller);
  app.use('/evals/*', caller);
  return app
    .route('/', healthRoutes())
    .route('/', openApiRoutes(app))
    .route('/', agentRoutes(deps))
    .route('/', runRoutes(deps))
    .route('/', approvalRoutes(deps))
    .route('/', forkRoutes(deps))
    .route('/', messageRoutes(deps))
    .route('/', eventRoutes(deps))
    .route('/', aguiRoutes(deps))
    .route('/', fileRoutes(deps))
    .route('/', a2aRoutes(app, deps))
    .route('/', scheduleRoutes(deps))
    .route('/', memoryRoutes(deps))
    .route('/', evalRoutes(deps))
    // MCP's tools call the routes above in-process, as the same caller.
    .route('/', mcpRoutes(app, deps));
}

/** The API's routes as types: what the typed client (`client.ts`) is built from. Import it with `import type` only. */
export type ApiApp = ReturnType<typeof createApi>;
