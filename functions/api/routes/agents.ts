/** `GET /agents`: the agents and workflows this deployment runs (docs/agents.md). */
import { createRoute } from '@hono/zod-openapi';
import { builtinCatalog } from '../../core/intake/request.js';
import { json, routes } from '../middleware.js';
import { AgentsPage } from '../schemas.js';
import type { ApiDeps } from '../types.js';

/** The catalog route: any caller may read it, as any caller may start a run of what it lists. */
export function agentRoutes(deps: Pick<ApiDeps, 'agents'>) {
  // The catalog is fixed when the function loads: listed once.
  const page = { items: (deps.agents ?? builtinCatalog).summaries() };
  return routes().openapi(
    createRoute({
      method: 'get',
      path: '/agents',
      summary: "The deployment's agents and workflows",
      description:
        'What `POST /runs` may name as `agent` or `workflow`, each with its version (a content hash of its definition). ' +
        'A run records the version it started with (`GET /runs/{runId}`).',
      responses: { 200: { description: 'Every agent, the built-ins first, then every workflow.', content: json(AgentsPage) } },
    }),
    (c) => c.json(page, 200),
  );
}
