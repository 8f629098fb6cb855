/**
 * One MCP request, answered by the official SDK's server on its web-standard Streamable HTTP
 * transport, stateless: a new server and transport per request and no session id, so any Lambda
 * instance answers any request (docs/mcp.md). Answers are JSON, which API Gateway's HTTP API
 * passes whole; a tool call that asks for progress (a progress token) is answered as a
 * server-sent event stream instead, the only way its notifications can travel with its result.
 * Loaded on the first `/mcp` request only, so the other routes' cold starts do not load the SDK.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { McpTool, RouteCall } from './mcp-tools.js';

/** The server's name and version, as `initialize` answers them. */
export const mcpServerInfo = { name: 'stepwise', version: '1.0.0' };

const instructions =
  'Stepwise runs tool-using agents. start_run (or run_<agent>) starts a run and gives its runId; get_run reads it until its status is no longer running. ' +
  'A tool call that waits for a reviewer is listed under waitingFor: decide_approval approves or denies it.';

// Each server would build a validator of its own (for elicitation, which this one never asks): one is shared.
const jsonSchemaValidator = new AjvJsonSchemaValidator();

/** Answers one POST of JSON-RPC messages with `tools`, their routes called through `call`. */
export async function answerMcp(request: Request, tools: readonly McpTool[], call: RouteCall): Promise<Response> {
  const server = new McpServer(mcpServerInfo, { capabilities: { tools: {} }, instructions, jsonSchemaValidator });
  for (const tool of tools) tool.register(server, call);
  // Read once, here: whether it asks for progress decides the answer's form, and the transport takes it parsed.
  const text = await request.text();
  const parsedBody = parsed(text);
  const streamed = asksForProgress(parsedBody);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streamed });
  await server.connect(transport);
  const response =
    parsedBody === undefined
      ? // Not JSON: the transport reads it again and answers with its JSON-RPC parse error.
        await transport.handleRequest(new Request(request, { body: text }))
      : await transport.handleRequest(request, { parsedBody });
  // A JSON answer is complete here; a stream is closed by the transport when its last result is written.
  if (!streamed) await server.close();
  return response;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Whether the body holds a tool call with a progress token (`params._meta.progressToken`). */
export function asksForProgress(body: unknown): boolean {
  return [body].flat().some((message) => {
    if (typeof message !== 'object' || message === null) return false;
    const { method, params } = message as { method?: unknown; params?: { _meta?: { progressToken?: unknown } } };
    return method === 'tools/call' && params?._meta?.progressToken !== undefined;
  });
}
