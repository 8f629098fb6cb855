/** The official MCP SDK client of Stepwise's `/mcp` (docs/mcp.md), for tests and the bench. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A connected client of `<base>/mcp`, as the caller the token names (the local caller without one). */
export async function connectMcp(base: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'stepwise-test', version: '1.0.0' });
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
  return client;
}

/** Calls a tool; its result. */
export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The text of a tool result. */
export function textOf(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}
