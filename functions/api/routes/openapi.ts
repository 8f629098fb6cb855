/** `GET /openapi.json`: the OpenAPI 3.1 document of every route the app declares and does not hide. */
import { type OpenAPIHono, createRoute } from '@hono/zod-openapi';
import { type ApiEnv, routes } from '../middleware.js';

/** The document's header; its paths come from the routes. */
const documentInfo = {
  openapi: '3.1.0',
  info: {
    title: 'Stepwise',
    version: '1.0.0',
    description: 'Start and follow tool-using LLM agent runs: one agent, or an Architect that plans and a Coder that builds.',
  },
};

/** The document route of `app`, which the sub-apps are mounted on. */
export function openApiRoutes(app: OpenAPIHono<ApiEnv>) {
  let document: ReturnType<typeof app.getOpenAPI31Document> | undefined;
  return routes().openapi(
    createRoute({ method: 'get', path: '/openapi.json', summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1.' } } }),
    // Generated on first request, when every route is mounted; most cold starts never need it.
    (c) => c.json((document ??= templatePaths(app.getOpenAPI31Document(documentInfo))), 200),
  );
}

/** Writes Hono's parameters with a pattern (`{path{.+}}`) as the plain templates OpenAPI knows (`{path}`). */
function templatePaths<T extends { paths?: Record<string, unknown> }>(document: T): T {
  const paths = Object.entries(document.paths ?? {}).map(([path, item]) => [path.replace(/\{(\w+)\{[^}]*\}\}/g, '{$1}'), item]);
  return { ...document, paths: Object.fromEntries(paths) };
}
