/**
 * The tools of one remote MCP server (Streamable HTTP), through the official SDK's client. A session
 * belongs to one run (docs/tools.md, "MCP servers and Lambda tools"): a warm function keeps the
 * sessions of the few runs it served last, closing the oldest, so no two runs (owners, tenants)
 * ever share one; a listing opens a session of its own and closes it. A session the server has
 * forgotten (HTTP 404) is opened again once, since such a request never reached a tool.
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
  /** Runs whose sessions a warm function keeps open; the least recently used is closed past it. @default 8 */
  maxSessions?: number;
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
  // One session per run, least recently used first: a server that keeps state per session never
  // mixes two runs' (or owners') state, and each call also names its run and owner in `_meta`.
  private readonly sessions = new Map<string, Session>();

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
    // A run lists once, at its first model call: a session for the listing alone, closed after it.
    await this.withClient(undefined, deadline, async (client) => {
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
   * Calls the tool in its run's session, with the step's keys and the run's owner in `_meta`
   * (`stepwise/runId`, `stepwise/toolUseId`, `stepwise/owner`, `stepwise/tenant`): a tool step
   * retried after the tool ran sends the same keys, so a server that cares can answer it once, and
   * a server acts for the run's owner, never for whoever else the function served before.
   */
  async call(tool: ExternalTool, input: unknown, context: ExternalCallContext): Promise<ExternalOutcome> {
    const deadline = new Deadline(this.options.callTimeoutMs ?? 60_000, 'the call');
    const args = input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
    const _meta = {
      'stepwise/runId': context.runId,
      'stepwise/toolUseId': context.toolUseId,
      ...(context.owner ? { 'stepwise/owner': context.owner.principal } : {}),
      ...(context.owner?.tenant !== undefined ? { 'stepwise/tenant': context.owner.tenant } : {}),
    };
    const result = await this.withClient(context.runId, deadline, (client) =>
      client.callTool({ name: tool.target, arguments: args, _meta }, undefined, deadline.options()),
    );
    return { content: resultText(result as CallToolResult), isError: result.isError === true };
  }

  /** Closes every session (tests, local shutdown). */
  async close(): Promise<void> {
    const open = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(open.map((session) => closeSession(session.client)));
  }

  /** `work` in the run's session (`runId`), or in one opened for it alone and closed after (`undefined`). */
  private async withClient<T>(runId: string | undefined, deadline: Deadline, work: (client: Client) => Promise<T>): Promise<T> {
    let session: Session | undefined;
    try {
      for (let attempt = 0; ; attempt++) {
        session = runId === undefined ? this.open(deadline) : this.sessionOf(runId, deadline);
        session.busy++;
        try {
          const client = await deadline.race(session.client);
          // Raced as well: a request's own signal stops waiting, but not every SDK step takes one.
          return await deadline.race(work(client));
        } catch (error) {
          // A JSON-RPC error from the server leaves the connection usable; a transport fault or a
          // request given up on may not (its HTTP request is still open until the transport closes).
          if (error instanceof StreamableHTTPError || !isServerAnswer(error)) await this.drop(runId, session);
          const sessionGone = error instanceof StreamableHTTPError && error.code === 404;
          if (!sessionGone || attempt > 0) throw error;
        } finally {
          session.busy--;
          if (runId === undefined || (session.evicted && session.busy === 0)) await closeSession(session.client);
        }
      }
    } catch (error) {
      if (!deadline.passed(error)) throw error;
      // Closed before answering, so nothing of this operation outlives it and the next one connects afresh.
      if (session) await this.drop(runId, session);
      throw deadline.exceeded();
    }
  }

  /** The run's open session (now the most recently used), or a new one; the least recently used past `maxSessions` is closed. */
  private sessionOf(runId: string, deadline: Deadline): Session {
    const known = this.sessions.get(runId);
    if (known) {
      this.sessions.delete(runId);
      this.sessions.set(runId, known);
      return known;
    }
    const session = this.open(deadline);
    this.sessions.set(runId, session);
    // A failed connection is not kept: the next call tries again.
    session.client.catch(() => {
      if (this.sessions.get(runId) === session) this.sessions.delete(runId);
    });
    for (const [oldest, evicted] of this.sessions) {
      if (this.sessions.size <= (this.options.maxSessions ?? 8)) break;
      this.sessions.delete(oldest);
      // A session still in use is closed when its last operation ends.
      evicted.evicted = true;
      if (evicted.busy === 0) void closeSession(evicted.client);
    }
    return session;
  }

  private open(deadline: Deadline): Session {
    const client = (async () => {
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
    client.catch(() => undefined);
    return { client, busy: 0, evicted: false };
  }

  /** Closes this session, and forgets it unless another one has replaced it already. */
  private async drop(runId: string | undefined, session: Session): Promise<void> {
    if (runId !== undefined && this.sessions.get(runId) === session) this.sessions.delete(runId);
    await closeSession(session.client);
  }
}

/** One MCP session: its client once connected, the operations using it, and whether it was evicted. */
interface Session {
  readonly client: Promise<Client>;
  busy: number;
  evicted: boolean;
}

async function closeSession(client: Promise<Client>): Promise<void> {
  await client.then((c) => c.close()).catch(() => undefined);
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
