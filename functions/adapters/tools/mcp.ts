/**
 * The tools of one remote MCP server (Streamable HTTP), through the official SDK's client. One
 * connection per server is kept while the function is warm; a session the server has forgotten
 * (HTTP 404) is opened again once, since such a request never reached a tool.
 *
 * Each operation has one deadline (invariant 3 in docs/ARCHITECTURE.md: timeouts nest): a call's connect, request and
 * reconnect-and-retry together stay within `callTimeoutMs`, a listing's connect and pages within
 * `listTimeoutMs`, so the Lambda never times out and retries a tool that already ran.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { type CallToolResult, ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AgentName } from '../../core/agents/types.js';
import { mcpCapabilities } from '../../core/untrusted/capabilities.js';
import { type ExternalCallContext, type ExternalOutcome, type ExternalTool, type McpServerConfig, type ToolSource, defaultExternalAgents } from '../../core/tools/external/types.js';
import { mcpSourceId, mcpToolName } from '../../core/tools/external/names.js';

export interface McpToolsOptions {
  /** Milliseconds for connecting and listing all pages; the inference step waits this long at most. @default 10000 */
  listTimeoutMs?: number;
  /** Milliseconds for one call, connecting and one retry included; below the tool Lambda's timeout (invariant 3, docs/ARCHITECTURE.md). @default 60000 */
  callTimeoutMs?: number;
  /** Pages of `tools/list` read at most. @default 20 */
  maxPages?: number;
  /** Reports tools left out (names that cannot be made valid). */
  log?: (message: string, detail: Record<string, unknown>) => void;
}

/** An MCP operation that ran out of its time budget; the model (call) or the log (listing) sees the message. */
export class McpDeadlineExceeded extends Error {
  override readonly name = 'McpDeadlineExceeded';
}

const clientInfo = { name: 'stepwise', version: '0.1.0' };

/** One MCP server as a source of tools named `<server>__<tool>`. */
export class McpToolSource implements ToolSource {
  readonly id: string;
  readonly agents: readonly AgentName[];
  // Shared by every run the warm function serves (one session, not one per run): nothing
  // run-specific lives in the session; each call carries its own run's ids in `_meta`.
  private client: Promise<Client> | undefined;

  constructor(
    private readonly server: McpServerConfig,
    private readonly options: McpToolsOptions = {},
  ) {
    this.id = mcpSourceId(server.name);
    this.agents = server.agents ?? defaultExternalAgents;
  }

  async list(): Promise<ExternalTool[]> {
    const deadline = new Deadline(this.options.listTimeoutMs ?? 10_000, 'listing the tools');
    const listed: Tool[] = [];
    await this.withClient(deadline, async (client) => {
      listed.length = 0;
      let cursor: string | undefined;
      for (let page = 0; page < (this.options.maxPages ?? 20); page++) {
        const answer = await client.listTools(cursor ? { cursor } : {}, deadline.options());
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
        capabilities: mcpCapabilities(this.server, name),
      });
    }
    return tools;
  }

  /**
   * Calls the tool with the step's keys in `_meta` (`stepwise/runId`, `stepwise/toolUseId`): a tool
   * step retried after the tool ran sends the same keys, so a server that cares can answer it once.
   */
  async call(tool: ExternalTool, input: unknown, context: ExternalCallContext): Promise<ExternalOutcome> {
    const deadline = new Deadline(this.options.callTimeoutMs ?? 60_000, 'the call');
    const args = input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
    const _meta = { 'stepwise/runId': context.runId, 'stepwise/toolUseId': context.toolUseId };
    const result = await this.withClient(deadline, (client) =>
      client.callTool({ name: tool.target, arguments: args, _meta }, undefined, deadline.options()),
    );
    return { content: resultText(result as CallToolResult), isError: result.isError === true };
  }

  /** Closes the connection (tests, local shutdown). */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.then((c) => c.close()).catch(() => undefined);
  }

  private async withClient<T>(deadline: Deadline, work: (client: Client) => Promise<T>): Promise<T> {
    let pending: Promise<Client> | undefined;
    try {
      for (let attempt = 0; ; attempt++) {
        pending = this.connect(deadline);
        const client = await deadline.race(pending);
        try {
          // Raced as well: a request's own signal stops waiting, but not every SDK step takes one.
          return await deadline.race(work(client));
        } catch (error) {
          // A JSON-RPC error from the server leaves the connection usable; a transport fault or a
          // request given up on may not (its HTTP request is still open until the transport closes).
          if (error instanceof StreamableHTTPError || !isServerAnswer(error)) await this.drop(pending);
          const sessionGone = error instanceof StreamableHTTPError && error.code === 404;
          if (!sessionGone || attempt > 0) throw error;
        }
      }
    } catch (error) {
      if (!deadline.passed(error)) throw error;
      // Closed before answering, so nothing of this operation outlives it and the next one connects afresh.
      if (pending) await this.drop(pending);
      throw deadline.exceeded();
    }
  }

  private connect(deadline: Deadline): Promise<Client> {
    this.client ??= (async () => {
      const client = new Client(clientInfo);
      const transport = new StreamableHTTPClientTransport(new URL(this.server.url));
      try {
        await deadline.race(client.connect(transport, deadline.options()));
      } catch (error) {
        // An abandoned handshake must not linger: closing aborts its HTTP requests.
        await client.close().catch(() => undefined);
        throw error;
      }
      return client;
    })();
    const pending = this.client;
    // A failed connection is not kept: the next call tries again.
    pending.catch(() => {
      if (this.client === pending) this.client = undefined;
    });
    return pending;
  }

  /** Closes this connection, and forgets it unless another one has replaced it already. */
  private async drop(pending: Promise<Client>): Promise<void> {
    if (this.client === pending) this.client = undefined;
    await pending.then((c) => c.close()).catch(() => undefined);
  }
}

/** The time budget of one operation: a signal for the SDK, and the time left for its own timer. */
class Deadline {
  readonly signal: AbortSignal;
  private readonly end: number;

  constructor(
    private readonly ms: number,
    private readonly what: string,
  ) {
    this.signal = AbortSignal.timeout(ms);
    this.end = Date.now() + ms;
  }

  /** Request options: the SDK's per-request timer (60 s unless told) set to what is left. */
  options(): RequestOptions {
    return { signal: this.signal, timeout: Math.max(1, this.end - Date.now()) };
  }

  /** `work`'s outcome, or an abort error as soon as the budget runs out. */
  race<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const stop = () => reject(this.signal.reason);
      if (this.signal.aborted) {
        stop();
        return;
      }
      this.signal.addEventListener('abort', stop, { once: true });
      void work.then(resolve, reject).finally(() => this.signal.removeEventListener('abort', stop));
    });
  }

  /** Whether `error` means the budget ran out (the signal, or the SDK's timer a moment earlier). */
  passed(error: unknown): boolean {
    return this.signal.aborted || (error instanceof McpError && error.code === Number(ErrorCode.RequestTimeout));
  }

  exceeded(): McpDeadlineExceeded {
    return new McpDeadlineExceeded(`${this.what} took longer than ${this.ms / 1000} s and was abandoned`);
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
