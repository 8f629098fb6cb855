/**
 * An example remote MCP server for trying Stepwise's MCP tools locally, built with the official
 * SDK: Streamable HTTP on http://127.0.0.1:8788/mcp (MCP_PORT to change), one `search` tool.
 * `npx tsx local/examples/mcp-server.ts`
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';
import { startLoopbackServer } from '../stand-ins/http-server.js';

const port = Number(process.env.MCP_PORT ?? 8788);

/** A fresh server for each request: stateless, as the SDK's examples do it. */
function docsServer(): McpServer {
  const server = new McpServer({ name: 'example-docs', version: '1.0.0' });
  server.registerTool(
    'search',
    { description: 'Searches the (tiny, made-up) Stepwise docs for a phrase.', inputSchema: { query: z.string().min(1) } },
    ({ query }) => ({ content: [{ type: 'text', text: `Stepwise docs, 1 match for "${query}": docs/tools.md#mcp-servers-and-lambda-tools` }] }),
  );
  return server;
}

const http = await startLoopbackServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST' }).end();
    return;
  }
  const server = docsServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  server
    .connect(transport)
    .then(() => transport.handleRequest(req, res))
    .catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
}, port);
process.stdout.write(`Example MCP server on ${http.url}/mcp\n`);
