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
import { type McpToolDeps, registerTools } from './mcp-tools.js';

/** The server's name and version, as `initialize` answers them. */
export const mcpServerInfo = { name: 'stepwise', version: '1.0.0' };

/** Answers one POST of JSON-RPC messages. */
export async function answerMcp(request: Request, deps: McpToolDeps): Promise<Response> {
  const server = new McpServer(mcpServerInfo, {
    capabilities: { tools: {} },
    instructions:
      'Stepwise runs tool-using agents. start_run (or run_<agent>) starts a run and gives its runId; get_run reads it until its status is no longer running. ' +
      'A tool call that waits for a reviewer is listed under waitingFor: decide_approval approves or denies it.',
  });
  registerTools(server, deps);
  const streamed = asksForProgress(await request.clone().json().catch(() => undefined));
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streamed });
  await server.connect(transport);
  const response = await transport.handleRequest(request);
  // A JSON answer is complete here; a stream is closed by the transport when its last result is written.
  if (!streamed) await server.close();
  return response;
}

/** Whether the body holds a tool call with a progress token (`params._meta.progressToken`). */
export function asksForProgress(body: unknown): boolean {
  return [body].flat().some((message) => {
    if (typeof message !== 'object' || message === null) return false;
    const { method, params } = message as { method?: unknown; params?: { _meta?: { progressToken?: unknown } } };
    return method === 'tools/call' && params?._meta?.progressToken !== undefined;
  });
}
