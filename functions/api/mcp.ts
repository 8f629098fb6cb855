/**
 * `/mcp`: Stepwise as an MCP server, Streamable HTTP, stateless (docs/mcp.md). `POST` carries
 * JSON-RPC messages; `GET` (a stream the server would open on its own) and `DELETE` (ending a
 * session) answer 405, as a server without sessions does. Each tool calls a route of `app`
 * in-process with the request's own credentials, so callers, owners, roles and quotas are the
 * routes' (DESIGN §7).
 */
import { createRoute } from '@hono/zod-openapi';
import type { Context } from 'hono';
import * as z from 'zod';
import { builtinCatalog } from '../core/intake/request.js';
import { type ApiEnv, refusal, routes } from './middleware.js';
import type * as McpServerModule from './mcp-server.js';
import { type RouteCall, mcpTools } from './mcp-tools.js';
import type { ErrorBody } from './schemas.js';
import type { ApiDeps } from './types.js';

/** What the MCP tools call: the app the routes are mounted on. */
export interface InProcessApp {
  fetch(request: Request, env?: unknown): Response | Promise<Response>;
}

/**
 * The body as the document shows it. A plain JSON Schema, not zod: the router would validate a
 * zod schema and read the body, which is the MCP transport's to read and answer (a bad message
 * gets a JSON-RPC error).
 */
const jsonRpcMessage = {
  type: 'object' as const,
  description: 'An MCP JSON-RPC 2.0 message (`initialize`, `tools/list`, `tools/call`, …); a batch is an array of them.',
  required: ['jsonrpc'],
  properties: { jsonrpc: { type: 'string' as const, enum: ['2.0'] }, id: { type: ['string', 'number'] as ('string' | 'number')[] }, method: { type: 'string' as const }, params: { type: 'object' as const } },
};

const noSessions = {
  405: refusal('This MCP server keeps no sessions: it opens no stream of its own (GET) and has no session to end (DELETE). Send messages with POST.'),
};

/** The `/mcp` routes, their tools calling `app`. */
export function mcpRoutes(app: InProcessApp, deps: Pick<ApiDeps, 'agents' | 'mcp'>) {
  const tools = mcpTools({ agents: (deps.agents ?? builtinCatalog).summaries(), ...(deps.mcp ? { wait: deps.mcp } : {}) });
  let server: Promise<typeof McpServerModule> | undefined;
  const refused: ErrorBody = { error: { code: 'MethodNotAllowed', message: noSessions[405].description } };
  return routes()
    .openapi(
      createRoute({
        method: 'post',
        path: '/mcp',
        summary: 'MCP (Streamable HTTP, stateless)',
        description:
          'JSON-RPC messages of the Model Context Protocol. Tools: `start_run`, `get_run`, `list_runs`, `cancel_run`, `decide_approval`, and `run_<agent>` for each defined agent (docs/mcp.md). ' +
          'Each tool answers as its route does for the same caller. The answer is JSON, or a server-sent event stream for a tool call with a progress token.',
        request: { body: { required: true, content: { 'application/json': { schema: jsonRpcMessage } } } },
        responses: {
          200: {
            description: 'The JSON-RPC answers.',
            content: { 'application/json': { schema: z.unknown() }, 'text/event-stream': { schema: z.string().meta({ description: 'SSE frames: progress notifications, then the result.' }) } },
          },
          202: { description: 'Notifications only: accepted, nothing to answer.' },
          400: { description: 'Not a JSON-RPC message (a JSON-RPC error).' },
          401: refusal('No valid credentials.'),
          406: { description: 'The request does not accept both application/json and text/event-stream (a JSON-RPC error).' },
          415: { description: 'The body is not application/json (a JSON-RPC error).' },
        },
      }),
      async (c) => {
        const { answerMcp } = await (server ??= import('./mcp-server.js'));
        return answerMcp(c.req.raw, tools, inProcess(app, c));
      },
    )
    .openapi(createRoute({ method: 'get', path: '/mcp', summary: 'Not offered (no sessions)', responses: noSessions }), (c) => c.json(refused, 405, { allow: 'POST' }))
    .openapi(createRoute({ method: 'delete', path: '/mcp', summary: 'Not offered (no sessions)', responses: noSessions }), (c) => c.json(refused, 405, { allow: 'POST' }));
}

/**
 * A route of `app` called as the request `c` is: its `Authorization` header and, behind API
 * Gateway, its Lambda event (which carries the IAM caller or the JWT's claims), so the route
 * reads the same caller.
 */
function inProcess(app: InProcessApp, c: Context<ApiEnv>): RouteCall {
  return async (method, path, body) => {
    const headers = new Headers();
    const authorization = c.req.header('authorization');
    if (authorization !== undefined) headers.set('authorization', authorization);
    if (body !== undefined) headers.set('content-type', 'application/json');
    const request = new Request(new URL(path, c.req.url), { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const response = await app.fetch(request, c.env);
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
}
