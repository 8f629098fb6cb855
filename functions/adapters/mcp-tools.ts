/**
 * The tools of one remote MCP server (Streamable HTTP), through the official SDK's client. One
 * connection per server is kept while the function is warm; a session the server has forgotten
 * (HTTP 404) is opened again once, since such a request never reached a tool.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AgentName } from '../core/conversation.js';
import {
  type ExternalOutcome,
  type ExternalTool,
  type McpServerConfig,
  type ToolSource,
  defaultExternalAgents,
  mcpToolName,
} from '../core/tools/external.js';

export interface McpToolsOptions {
  /** Milliseconds for connecting and listing; the inference step waits this long at most. @default 10000 */
  listTimeoutMs?: number;
  /** Milliseconds for one call; below the tool Lambda's timeout (invariant 3). @default 60000 */
  callTimeoutMs?: number;
  /** Pages of `tools/list` read at most. @default 20 */
  maxPages?: number;
  /** Reports tools left out (names that cannot be made valid). */
  log?: (message: string, detail: Record<string, unknown>) => void;
}

const clientInfo = { name: 'stepwise', version: '0.1.0' };

/** One MCP server as a source of tools named `<server>__<tool>`. */
export class McpToolSource implements ToolSource {
  readonly id: string;
  readonly agents: readonly AgentName[];
  private client: Promise<Client> | undefined;

  constructor(
    private readonly server: McpServerConfig,
    private readonly options: McpToolsOptions = {},
  ) {
    this.id = `mcp:${server.name}`;
    this.agents = server.agents ?? defaultExternalAgents;
  }

  async list(): Promise<ExternalTool[]> {
    const timeout = this.options.listTimeoutMs ?? 10_000;
    const listed: Tool[] = [];
    await this.withClient(timeout, async (client) => {
      listed.length = 0;
      let cursor: string | undefined;
      for (let page = 0; page < (this.options.maxPages ?? 20); page++) {
        const answer = await client.listTools(cursor ? { cursor } : {}, { timeout });
        listed.push(...answer.tools);
        cursor = answer.nextCursor;
        if (!cursor) break;
      }
    });
    const tools: ExternalTool[] = [];
    for (const tool of listed) {
      const name = mcpToolName(this.server.name, tool.name);
      if (!name) {
        this.options.log?.('MCP tool left out: its name cannot be made a valid tool name', { server: this.server.name, tool: tool.name });
        continue;
      }
      const { $schema: _dialect, ...inputSchema } = tool.inputSchema;
      tools.push({
        name,
        description: tool.description ?? tool.title ?? tool.name,
        inputSchema,
        source: this.id,
        target: tool.name,
        agents: [...this.agents],
      });
    }
    return tools;
  }

  async call(tool: ExternalTool, input: unknown): Promise<ExternalOutcome> {
    const timeout = this.options.callTimeoutMs ?? 60_000;
    const args = input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
    const result = await this.withClient(timeout, (client) => client.callTool({ name: tool.target, arguments: args }, undefined, { timeout }));
    return { content: resultText(result as CallToolResult), isError: result.isError === true };
  }

  /** Closes the connection (tests, local shutdown). */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.then((c) => c.close()).catch(() => undefined);
  }

  private async withClient<T>(timeout: number, work: (client: Client) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.connect(timeout);
      try {
        return await work(client);
      } catch (error) {
        // A JSON-RPC error from the server leaves the connection usable; a transport fault may not.
        if (error instanceof StreamableHTTPError || !isServerAnswer(error)) await this.close();
        const sessionGone = error instanceof StreamableHTTPError && error.code === 404;
        if (!sessionGone || attempt > 0) throw error;
      }
    }
  }

  private connect(timeout: number): Promise<Client> {
    this.client ??= (async () => {
      const client = new Client(clientInfo);
      const transport = new StreamableHTTPClientTransport(new URL(this.server.url));
      await client.connect(transport, { timeout });
      return client;
    })();
    const pending = this.client;
    // A failed connection is not kept: the next call tries again.
    pending.catch(() => {
      if (this.client === pending) this.client = undefined;
    });
    return pending;
  }
}

function isServerAnswer(error: unknown): boolean {
  return error instanceof Error && error.name === 'McpError' && (error as { code?: unknown }).code !== -32001;
}

/** A tool result as text for the model: text blocks as they are, anything else described. */
export function resultText(result: CallToolResult): string {
  const parts = result.content.map((block) => {
    switch (block.type) {
      case 'text':
        return block.text;
      case 'resource':
        return 'text' in block.resource ? block.resource.text : `[resource ${block.resource.uri} (${block.resource.mimeType ?? 'binary'}), not shown]`;
      case 'resource_link':
        return `[resource ${block.uri}${block.name ? ` "${block.name}"` : ''}]`;
      case 'image':
      case 'audio':
        return `[${block.type} (${block.mimeType}), not shown]`;
      default:
        return JSON.stringify(block);
    }
  });
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join('\n');
}
