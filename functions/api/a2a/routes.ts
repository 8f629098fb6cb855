/**
 * The A2A routes (docs/a2a.md): `GET /.well-known/agent-card.json`, the agent card, and
 * `POST /a2a`, the JSON-RPC interface it names, answered by the SDK's JSON-RPC transport handler
 * on `StepwiseTasks`. Deployed, `POST /a2a` streams, so it is served by the stream function's URL
 * (`stream-routes.ts`), which the card names.
 */
import { createRoute } from '@hono/zod-openapi';
import { AgentCard, A2A_VERSION_HEADER, formatSSEErrorEvent, formatSSEEvent } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import * as z from 'zod';
import { builtinCatalog } from '../../core/intake/request.js';
import { defaultFollowSettings } from '../../core/stream/follow.js';
import { json, jsonBody, routes } from '../middleware.js';
import type { ApiDeps } from '../types.js';
import { agentCard } from './card.js';
import { type InProcessApi, StepwiseTasks } from './handler.js';

/** The app the routes call in-process: every A2A method is answered by the app's own routes. */
export interface InProcessApp {
  fetch(request: Request, env?: unknown): Response | Promise<Response>;
}

/** A JSON-RPC 2.0 request, as the OpenAPI document shows it; the SDK's transport handler checks it, and answers a malformed one with a JSON-RPC error. */
const JsonRpcRequest = z
  .looseObject({
    jsonrpc: z.unknown().meta({ description: '"2.0"' }),
    id: z.unknown().meta({ description: 'A string or an integer; the answer carries it back.' }),
    method: z.unknown().meta({ description: 'SendMessage, SendStreamingMessage, GetTask, CancelTask or SubscribeToTask (A2A v1.0).' }),
    params: z.unknown().meta({ description: 'The method\'s request object, as A2A v1.0 defines it (ProtoJSON).' }),
  })
  .meta({ id: 'JsonRpcRequest' });

/** The card's JSON (ProtoJSON, as `@a2a-js/sdk` clients read it). */
const CardJson = z.looseObject({ name: z.string(), supportedInterfaces: z.array(z.looseObject({ url: z.string(), protocolBinding: z.string() })) }).meta({ id: 'AgentCard' });

/** The agent card route and the JSON-RPC route, calling `app` in-process for every task operation. */
export function a2aRoutes(app: InProcessApp, deps: Pick<ApiDeps, 'agents' | 'a2a' | 'stream'>) {
  const agents = (deps.agents ?? builtinCatalog).summaries();
  const settings = deps.a2a ?? { auth: 'local' };
  const cardOf = (c: Context) => agentCard({ agents, auth: settings.auth, url: settings.url ?? new URL('/a2a', c.req.url).href });
  const heartbeatMs = deps.stream?.heartbeatMs ?? defaultFollowSettings.heartbeatMs;

  return routes()
    .openapi(
      createRoute({
        method: 'get',
        path: '/.well-known/agent-card.json',
        summary: 'The A2A agent card: one skill per agent and workflow, the JSON-RPC interface, its auth',
        responses: { 200: { description: 'The card (A2A v1.0).', content: json(CardJson) } },
      }),
      (c) => c.json(AgentCard.toJSON(cardOf(c)) as z.infer<typeof CardJson>, 200),
    )
    .openapi(
      createRoute({
        method: 'post',
        path: '/a2a',
        summary: 'A2A JSON-RPC: SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask; a task is a run',
        description:
          'A task is a run (its id the run id, its context the session). The same callers, owners, roles and quotas as the run routes: ' +
          'another caller\'s task is "task not found". Streaming methods answer server-sent events, one JSON-RPC response each.',
        middleware: [jsonBody] as const,
        request: { body: { required: true, content: json(JsonRpcRequest) } },
        responses: {
          200: {
            description: 'A JSON-RPC response (a result or an error), or for a streaming method server-sent events of JSON-RPC responses.',
            content: { 'application/json': { schema: z.looseObject({ jsonrpc: z.literal('2.0') }) }, 'text/event-stream': { schema: z.string() } },
          },
        },
      }),
      async (c) => {
        const card = cardOf(c);
        const context = new ServerCallContext({ requestedVersion: c.req.header(A2A_VERSION_HEADER) ?? '0.3' });
        const body: unknown = await c.req.json();
        const id = typeof body === 'object' && body !== null && 'id' in body ? body.id : null;
        try {
          validateVersion(context.requestedVersion, card, 'JSONRPC');
        } catch (error) {
          return c.json({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(error) }, 200);
        }
        const transport = new JsonRpcTransportHandler(new StepwiseTasks(card, inProcess(app, c)));
        const answer = await transport.handle(body as Record<string, unknown>, context);
        if (!(Symbol.asyncIterator in answer)) return c.json(answer, 200);
        // A refusal before the first event (no such task, a quota) is a plain JSON-RPC answer, as the SDK's own servers give it.
        const first = await answer.next().catch((error: unknown) => ({ failed: error }));
        if ('failed' in first) return c.json({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(first.failed) }, 200);
        c.header('X-Accel-Buffering', 'no');
        return streamSSE(c, async (stream) => {
          stream.onAbort(() => void answer.return(undefined));
          // A wait for a reviewer can be long and silent: a comment now and then keeps proxies from closing the stream.
          const heartbeat = setInterval(() => void stream.write(': keep-alive\n\n'), heartbeatMs);
          try {
            if (!first.done) await stream.write(formatSSEEvent(first.value));
            for await (const event of answer) await stream.write(formatSSEEvent(event));
          } catch (error) {
            await stream.write(formatSSEErrorEvent({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(error) }));
          } finally {
            clearInterval(heartbeat);
          }
        });
      },
    );
}

/** The app's routes as the caller of `c` calls them: its credentials (the header, the Lambda event), its origin, its disconnect. */
function inProcess(app: InProcessApp, c: Context): InProcessApi {
  const authorization = c.req.header('authorization');
  return async (method, path, options = {}) => {
    const headers = {
      ...(authorization ? { authorization } : {}),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    };
    const request = new Request(new URL(path, c.req.url), {
      method,
      headers,
      signal: c.req.raw.signal,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    return app.fetch(request, c.env);
  };
}
