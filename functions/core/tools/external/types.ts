/**
 * Tools from outside Stepwise (MCP servers, Lambda functions): their configuration, the catalog
 * a run lists once, and the `ToolSource` port the adapters implement.
 */
import * as z from 'zod';
import { AgentName } from '../../agents/types.js';
import type { Owner } from '../../callers/types.js';
import { named } from '../../errors/errors.js';

/** Anthropic's rule for tool names. */
export const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/** Separates an MCP server's name from its tool's name: `<server>__<tool>`. */
export const mcpSeparator = '__';

/** The agents that see an external tool when its config names none: the ones that act, not the Architect. */
export const defaultExternalAgents: readonly AgentName[] = ['single', 'coder'];

const Agents = z.array(AgentName).min(1).optional();

/**
 * What a tool can do that matters to the lethal trifecta (docs/tools.md, "Capabilities"):
 * `untrusted` brings outside content in, `private` reads the team's data, `egress` sends data out.
 */
export const Capability = z.enum(['untrusted', 'private', 'egress']);

export type Capability = z.infer<typeof Capability>;

/** A tool's capabilities, each once; `[]` declares a tool that does none of the three. */
export const Capabilities = z.array(Capability).max(3).refine((list) => new Set(list).size === list.length, 'names a capability twice');

/** What an external tool whose configuration says nothing can do: anything (fail closed). */
export const unclassifiedCapabilities: readonly Capability[] = ['untrusted', 'egress'];

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
  /** What every tool of the server can do, unless `toolCapabilities` names it. @default ["untrusted", "egress"] */
  capabilities: Capabilities.optional(),
  /** Per tool, by the name the model calls it (`<server>__<tool>`): overrides `capabilities`. */
  toolCapabilities: z.record(z.string().regex(toolNamePattern, 'a tool name as the model calls it, <server>__<tool>'), Capabilities).optional(),
}).superRefine((server, ctx) => {
  for (const name of Object.keys(server.toolCapabilities ?? {})) {
    if (!name.startsWith(`${server.name}${mcpSeparator}`) || name.length === server.name.length + mcpSeparator.length) {
      ctx.addIssue({ code: 'custom', path: ['toolCapabilities', name], message: `names a tool of this server as ${server.name}${mcpSeparator}<tool>` });
    }
  }
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
  /** What the tool can do. @default ["untrusted", "egress"] */
  capabilities: Capabilities.optional(),
});

export type LambdaToolConfig = z.infer<typeof LambdaToolConfig>;

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
  /** What it can do, from the deployment's configuration when the run listed it; absent on older catalogs (read as unclassified). */
  capabilities: z.array(Capability).optional(),
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
 * deduplicates a call retried after it ran but before its result was stored; and for whom: the
 * run's owner, so a tool acts for that caller and tenant, not for the deployment (no confused deputy).
 */
export interface ExternalCallContext {
  runId: string;
  toolUseId: string;
  /** The run's owner; absent only on runs made before runs had owners. */
  owner?: Owner;
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

/**
 * The service in front of an external tool is throttling or failing (Lambda's 429 and 5xx): not
 * the tool's answer, so the state machine retries the step instead of the model seeing it.
 */
export class ToolUnavailable extends named('ToolUnavailable') {}

/** The run's external tools, as the steps use them (`ExternalTools` is the implementation). */
export interface ExternalToolsPort {
  /** The run's catalog: listed at its first model call and stored, then read back. */
  forRun(runId: string): Promise<ToolCatalog>;
  /** The run's stored catalog, if it was listed. */
  stored(runId: string): Promise<ToolCatalog | undefined>;
  /** Calls one tool of the catalog. */
  call(tool: ExternalTool, input: unknown, context: ExternalCallContext): Promise<ExternalOutcome>;
}
