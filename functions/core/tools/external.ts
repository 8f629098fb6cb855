/**
 * Tools from outside Stepwise: the tools of remote MCP servers and a deployment's own Lambda
 * functions. Core knows them only through the `ToolSource` port; the adapters speak MCP and
 * Lambda Invoke.
 *
 * The tools a run offers are listed once, at its first model call, and stored as the run's
 * catalog with a conditional write; every later step of the run (and every tool step) reads that
 * catalog, so a retried step or a server whose tools change mid-run never changes the bytes sent
 * to the model (invariant 4, docs/ARCHITECTURE.md).
 */
import * as z from 'zod';
import { AgentName } from '../names.js';
import { InfrastructureError, messageOf } from '../errors.js';
import type { ToolSpec } from '../model.js';

/** Anthropic's rule for tool names. */
export const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/** Separates an MCP server's name from its tool's name: `<server>__<tool>`. */
export const mcpSeparator = '__';

/** The agents that see an external tool when its config names none: the ones that act, not the Architect. */
export const defaultExternalAgents: readonly AgentName[] = ['single', 'coder'];

const Agents = z.array(AgentName).min(1).optional();

/** One remote MCP server, reached over Streamable HTTP. */
export const McpServerConfig = z.strictObject({
  /** Prefixes its tools' names; letters, digits and `-`, 1..32 characters, so `__` stays a clean separator. */
  name: z
    .string()
    .regex(/^[a-zA-Z0-9-]{1,32}$/, 'a server name is 1..32 letters, digits or "-"'),
  /** `https`, or `http` on this machine only (tool inputs and results must not cross a network in clear). */
  url: z
    .url({ protocol: /^https?$/ })
    .refine((url) => url.startsWith('https:') || /^http:\/\/(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?(\/|$)/.test(url), 'an MCP server is reached over https (http only on localhost)')
    .refine((url) => !new URL(url).username && !new URL(url).password, 'credentials do not belong in the URL: it is stored in the template and the functions\' environment'),
  /** The agents that see this server's tools. @default ["single", "coder"] */
  agents: Agents,
});
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/**
 * A deployment's external tools by name, as approval policies name them: the MCP servers (whose
 * tools are known only when a run lists them) and the Lambda tools. No URL, no function: what
 * the API and intake functions are told, since they never call a tool.
 */
export interface ExternalToolNames {
  readonly mcpServers: readonly string[];
  readonly lambdaTools: readonly string[];
}

/** A deployment with no external tools. */
export const noExternalTools: ExternalToolNames = { mcpServers: [], lambdaTools: [] };

/** The names of a configuration's servers and Lambda tools. */
export function externalToolNames(config: { mcpServers: readonly { name: string }[]; lambdaTools: readonly { name: string }[] }): ExternalToolNames {
  return { mcpServers: config.mcpServers.map((server) => server.name), lambdaTools: config.lambdaTools.map((tool) => tool.name) };
}

/**
 * Whether the model may call a configured external tool by `name`: a Lambda tool's name, or
 * `<server>__<tool>` of a configured MCP server with a tool part that `mcpToolName` could make
 * (server names have no "_", so the first "__" ends the server's).
 */
export function isExternalToolName(names: ExternalToolNames, name: string): boolean {
  if (!toolNamePattern.test(name)) return false;
  if (names.lambdaTools.includes(name)) return true;
  const server = mcpServerOf(name);
  return server !== undefined && name.length > server.length + mcpSeparator.length && names.mcpServers.includes(server);
}

/**
 * The server of an MCP tool's name (`<server>__<tool>`), `undefined` for any other name. Server
 * names have no "_", so the first "__" ends the server's.
 */
export function mcpServerOf(name: string): string | undefined {
  const at = name.indexOf(mcpSeparator);
  return at > 0 ? name.slice(0, at) : undefined;
}

/** The source id of an MCP server's tools, as a run's catalog names it (`unavailable`). */
export function mcpSourceId(server: string): string {
  return `mcp:${server}`;
}

/**
 * The MCP tools (`<server>__<tool>`) a run's approval policy names that its catalog does not list,
 * though their server was listed: a policy is checked at intake against the configured servers
 * only (their tools are known once a run lists them), and such a name, misspelled or gone, would
 * never match a call, so the tool it meant would run ungated. A server that could not be listed
 * offers the model none of its tools, so none of them can be called.
 */
export function unlistedPolicyTools(policyTools: readonly string[], catalog: Pick<ToolCatalog, 'tools' | 'unavailable'>): string[] {
  const listed = new Set(catalog.tools.map((tool) => tool.name));
  const down = new Set(catalog.unavailable.map((entry) => entry.source));
  return policyTools.filter((name) => {
    const server = mcpServerOf(name);
    return server !== undefined && !listed.has(name) && !down.has(mcpSourceId(server));
  });
}

/** A JSON Schema for a tool's input: an object schema, as the Messages API requires. */
export const ToolInputSchema = z.looseObject({ type: z.literal('object') });

/** One Lambda function offered as a tool. */
export const LambdaToolConfig = z.strictObject({
  name: z
    .string()
    .regex(toolNamePattern, 'a tool name matches ^[a-zA-Z0-9_-]{1,64}$')
    .refine((name) => !name.includes(mcpSeparator), `"${mcpSeparator}" is reserved for MCP tools (<server>__<tool>)`),
  description: z.string().min(1),
  inputSchema: ToolInputSchema,
  /** The function's name or ARN. */
  functionName: z.string().min(1),
  /** The agents that see this tool. @default ["single", "coder"] */
  agents: Agents,
});
export type LambdaToolConfig = z.infer<typeof LambdaToolConfig>;

/**
 * The external tools of a deployment, checked as a whole: unique names, none taking a built-in
 * tool's name. `reserved` are the built-in names.
 */
export function externalToolsConfig(reserved: readonly string[]) {
  return z
    .object({ mcpServers: z.array(McpServerConfig).default([]), lambdaTools: z.array(LambdaToolConfig).default([]) })
    .superRefine(({ mcpServers, lambdaTools }, ctx) => {
      const seen = new Set<string>();
      mcpServers.forEach((server, i) => {
        if (seen.has(server.name)) ctx.addIssue({ code: 'custom', path: ['mcpServers', i, 'name'], message: `server "${server.name}" is configured twice` });
        seen.add(server.name);
      });
      const tools = new Set<string>();
      lambdaTools.forEach((tool, i) => {
        if (reserved.includes(tool.name)) {
          ctx.addIssue({ code: 'custom', path: ['lambdaTools', i, 'name'], message: `"${tool.name}" is a built-in tool's name` });
        }
        if (tools.has(tool.name)) ctx.addIssue({ code: 'custom', path: ['lambdaTools', i, 'name'], message: `tool "${tool.name}" is configured twice` });
        tools.add(tool.name);
      });
    });
}

/** One tool of a run's catalog: what the model sees, and where a call goes. */
export const ExternalTool = z.object({
  /** The name the model calls it by. */
  name: z.string().regex(toolNamePattern),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
  /** The source that serves it: `mcp:<server>` or `lambda`. */
  source: z.string(),
  /** Its name at the source: the MCP tool's own name, or the Lambda function. */
  target: z.string(),
  agents: z.array(AgentName),
});
export type ExternalTool = z.infer<typeof ExternalTool>;

/** The external tools of one run, fixed at its first model call. */
export const ToolCatalog = z.object({
  tools: z.array(ExternalTool),
  /** Sources that could not be listed, and tools left out, with the reason. */
  unavailable: z.array(z.object({ source: z.string(), reason: z.string(), agents: z.array(AgentName) })),
  listedAt: z.string(),
});
export type ToolCatalog = z.infer<typeof ToolCatalog>;

/** A tool's answer: text for the model, and whether it is an error it should act on. */
export interface ExternalOutcome {
  content: string;
  isError: boolean;
  /** `false` when the call was refused before it reached the tool (invalid input, a tool gone). @default true */
  ran?: boolean;
}

/**
 * Which call this is: the step's own keys (invariant 3, docs/ARCHITECTURE.md), so a source can hand them to a tool that
 * deduplicates a call retried after it ran but before its result was stored.
 */
export interface ExternalCallContext {
  runId: string;
  toolUseId: string;
}

/** A place tools come from: one MCP server, or the configured Lambda functions. */
export interface ToolSource {
  /** `mcp:<server>` or `lambda`; stored with each tool so a call finds its source. */
  readonly id: string;
  /** The agents that would see its tools (for the note when it is down). */
  readonly agents: readonly AgentName[];
  /** The tools available now; throws when the source cannot be reached. */
  list(): Promise<ExternalTool[]>;
  /** Runs one call; a failure the model should see is an `isError` outcome or a thrown error. */
  call(tool: ExternalTool, input: unknown, context: ExternalCallContext): Promise<ExternalOutcome>;
}

/** Where a run's catalog is kept. */
export interface ToolCatalogStore {
  getCatalog(runId: string): Promise<ToolCatalog | undefined>;
  /** Stores the catalog unless one is stored already; answers the one that is stored. */
  putCatalog(runId: string, catalog: ToolCatalog): Promise<ToolCatalog>;
}

/** The name the model sees for an MCP server's tool; `undefined` when no valid name can be made. */
export function mcpToolName(server: string, tool: string): string | undefined {
  // MCP allows dots and slashes in tool names; Anthropic does not, so those become "_".
  const name = `${server}${mcpSeparator}${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  return toolNamePattern.test(name) ? name : undefined;
}

/**
 * The service in front of an external tool is throttling or failing (Lambda's 429 and 5xx): not
 * the tool's answer, so the state machine retries the step instead of the model seeing it.
 */
export class ToolUnavailable extends InfrastructureError {
  override readonly name = 'ToolUnavailable';
  override readonly transient = true;
}

/** The external tools of runs: listed once per run, stored, and called by name. */
export class ExternalTools {
  private readonly byId: Map<string, ToolSource>;
  private readonly cache = new Map<string, ToolCatalog>();

  constructor(
    sources: readonly ToolSource[],
    private readonly store: ToolCatalogStore,
    private readonly options: { clock?: () => Date; log?: (message: string, detail: Record<string, unknown>) => void } = {},
  ) {
    this.byId = new Map(sources.map((source) => [source.id, source]));
  }

  /**
   * The run's catalog: the stored one, else the sources listed now and stored once (a concurrent
   * or retried step that lost the write gets the winner's). A source that fails to list is left
   * out and named in `unavailable`; listing never fails the step.
   */
  async forRun(runId: string): Promise<ToolCatalog> {
    const known = await this.stored(runId);
    if (known) return known;
    const catalog = await this.listAll();
    return this.remember(runId, await this.store.putCatalog(runId, catalog));
  }

  /** The run's stored catalog, without listing (the tool step). */
  async stored(runId: string): Promise<ToolCatalog | undefined> {
    const cached = this.cache.get(runId);
    if (cached) return cached;
    const stored = await this.store.getCatalog(runId);
    return stored ? this.remember(runId, stored) : undefined;
  }

  /**
   * Calls one tool. Every failure the model can act on (the tool's own error, a server that is
   * down, a timeout) comes back as an error outcome (invariant 5, docs/ARCHITECTURE.md); only infrastructure faults throw.
   */
  async call(tool: ExternalTool, input: unknown, context: ExternalCallContext): Promise<ExternalOutcome> {
    const source = this.byId.get(tool.source);
    if (!source) return { content: `${tool.name} is not available in this deployment any more.`, isError: true, ran: false };
    try {
      return await source.call(tool, input, context);
    } catch (error) {
      if (error instanceof InfrastructureError) throw error;
      return { content: `${tool.name} failed: ${messageOf(error)}`, isError: true };
    }
  }

  private async listAll(): Promise<ToolCatalog> {
    const listed = await Promise.all(
      [...this.byId.values()].map((source) =>
        source.list().then(
          (tools) => ({ source, tools }),
          (error: unknown) => ({ source, reason: messageOf(error) }),
        ),
      ),
    );
    const tools: ExternalTool[] = [];
    const unavailable: ToolCatalog['unavailable'] = [];
    const names = new Set<string>();
    for (const outcome of listed) {
      const source = outcome.source.id;
      if ('reason' in outcome) {
        const { reason } = outcome;
        this.options.log?.('External tool source unavailable; its tools are left out of the run', { source, reason });
        unavailable.push({ source, reason, agents: [...outcome.source.agents] });
        continue;
      }
      for (const tool of outcome.tools) {
        if (names.has(tool.name)) {
          unavailable.push({ source, reason: `tool ${tool.name} is listed twice; the first one is kept`, agents: [] });
          continue;
        }
        names.add(tool.name);
        tools.push(tool);
      }
    }
    return { tools, unavailable, listedAt: (this.options.clock?.() ?? new Date()).toISOString() };
  }

  private remember(runId: string, catalog: ToolCatalog): ToolCatalog {
    // A catalog never changes once stored, so a warm function may keep it; a few hundred runs at most.
    if (this.cache.size >= 200) {
      const [oldest] = this.cache.keys();
      // Stryker disable next-line ConditionalExpression: the cache holds 200 entries here, so it has an oldest
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(runId, catalog);
    return catalog;
  }
}

/** The catalog's tools an agent sees, after its built-in ones, in catalog order (stable). */
export function externalSpecs(catalog: ToolCatalog | undefined, agent: AgentName): ToolSpec[] {
  return (catalog?.tools ?? [])
    .filter((tool) => tool.agents.includes(agent))
    .map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
}

/** A paragraph for the agent's system prompt naming its sources that were down when the run began. */
export function unavailableNote(catalog: ToolCatalog | undefined, agent: AgentName): string {
  const down = (catalog?.unavailable ?? []).filter((d) => d.agents.includes(agent));
  if (down.length === 0) return '';
  const names = [...new Set(down.map((d) => d.source))].join(', ');
  return `\n\nSome external tools could not be listed when this run began and are not offered: ${names}.`;
}

/** A source that lists fixed tools and cannot call them: what the inference step needs of Lambda tools. */
export function listedLambdaTools(configs: readonly LambdaToolConfig[]): ToolSource {
  const tools = lambdaCatalogEntries(configs);
  return {
    id: 'lambda',
    agents: [...new Set(tools.flatMap((tool) => tool.agents))],
    list: () => Promise.resolve(tools),
    call: () => Promise.reject(new Error('This function lists Lambda tools but does not call them.')),
  };
}

/** The catalog entries of the configured Lambda tools. */
export function lambdaCatalogEntries(configs: readonly LambdaToolConfig[]): ExternalTool[] {
  return configs.map((config) => ({
    name: config.name,
    description: config.description,
    inputSchema: config.inputSchema,
    source: 'lambda',
    target: config.functionName,
    agents: [...(config.agents ?? defaultExternalAgents)],
  }));
}
