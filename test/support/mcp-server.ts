/**
 * A real MCP server for tests, built with the official SDK: Streamable HTTP on a loopback port,
 * stateless (a fresh server per request, so tools added or removed show on the next request).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { startLoopbackServer } from '../../local/stand-ins/http-server.js';

export interface TestMcpServer {
  url: string;
  /** Tool calls received: name and arguments, in order. */
  calls: { name: string; args: unknown }[];
  /** JSON-RPC methods received, in order. */
  methods: string[];
  close(): Promise<void>;
}

/** Starts a server whose tools `define` registers, afresh for each request. */
export async function startMcpServer(define: (server: McpServer, calls: TestMcpServer['calls']) => void): Promise<TestMcpServer> {
  const calls: TestMcpServer['calls'] = [];
  const methods: string[] = [];
  const http = await startLoopbackServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { method?: string } | { method?: string }[];
      for (const message of Array.isArray(body) ? body : [body]) if (message.method) methods.push(message.method);
      const server = new McpServer({ name: 'test-server', version: '1.0.0' });
      define(server, calls);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  return { url: `${http.url}/mcp`, calls, methods, close: http.close };
}
