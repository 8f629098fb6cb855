/**
 * The deployed HTTP API routes what the app documents: API Gateway's route list (lib/front-door.ts)
 * is the one list kept beside the app's own declarations, so a route added to the app and not to
 * API Gateway fails here rather than answering 404 in a deployment. The stream routes are the
 * exception: the HTTP API cannot stream, so they are served by the stream function's URL alone.
 */
import { describe, expect, it } from 'vitest';
import { streamRoutes } from '../../functions/api/stream-routes.js';
import { apiRoutes } from '../../lib/front-door.js';
import { memoryApi } from '../support/api.js';

describe('the HTTP API routes', () => {
  it('are the documented routes, but the local server\'s GET /health and the stream routes', async () => {
    const { body } = await memoryApi().request('GET', '/openapi.json');
    const documented = Object.entries(body.paths as Record<string, Record<string, unknown>>).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    // API Gateway writes a parameter that spans "/" `{path+}`; OpenAPI writes it `{path}`.
    const deployed = apiRoutes.map(([method, path]) => `${method} ${path.replace('+}', '}')}`);
    const elsewhere = ['GET /health', ...streamRoutes.map(([method, path]) => `${method} ${path}`)];
    expect(deployed.sort()).toEqual(documented.filter((route) => !elsewhere.includes(route)).sort());
  });
});
