/**
 * Tool capabilities (docs/tools.md, "Capabilities"; DESIGN §16): `untrusted` brings outside content
 * in, `private` reads the team's data, `egress` sends data out. External tools take theirs from the
 * deployment's configuration (a server's default, overridden per `<server>__<tool>`), built-in tools
 * are classified here, and whatever is not classified can do anything (fail closed).
 */
import { type Capability, type ExternalTool, type LambdaToolConfig, type McpServerConfig, unclassifiedCapabilities } from '../tools/external/types.js';

/**
 * The built-in tools. The workspace is the team's own data and stays in its account, so the file
 * tools that read it are `private` and those that write it are not `egress`; none reaches outside.
 */
export const builtinCapabilities: Readonly<Record<string, readonly Capability[]>> = {
  calculator: [],
  read_file: ['private'],
  list_files: ['private'],
  // Its answer says whether the text was there: a read of the workspace.
  edit_file: ['private'],
  write_file: [],
  finish_plan: [],
  // Memory holds what models wrote, maybe after reading outside content (docs/memory.md): untrusted, and the team's own.
  memory: ['untrusted', 'private'],
};

/** A call of an agent answers with its child run's result: model output that may have read untrusted content. */
export const agentToolCapabilities: readonly Capability[] = ['untrusted'];

/** An MCP tool's capabilities: its own entry in `toolCapabilities`, else the server's, else unclassified. */
export function mcpCapabilities(server: Pick<McpServerConfig, 'capabilities' | 'toolCapabilities'>, name: string): Capability[] {
  return [...(server.toolCapabilities?.[name] ?? server.capabilities ?? unclassifiedCapabilities)];
}

/** A Lambda tool's capabilities: its configuration's, else unclassified. */
export function lambdaCapabilities(tool: Pick<LambdaToolConfig, 'capabilities'>): Capability[] {
  return [...(tool.capabilities ?? unclassifiedCapabilities)];
}

/** What an agent knows of the tools a name may stand for: the run's external tools, and its tools that call agents. */
export interface ToolKinds {
  readonly external: readonly Pick<ExternalTool, 'name' | 'capabilities'>[];
  readonly agentTools: ReadonlySet<string>;
}

/**
 * The capabilities of the tool an agent calls by `name`: a built-in's, an agent's, an external
 * tool's as its run listed it; anything else (a tool gone, a catalog listed before tools had
 * capabilities) is unclassified.
 */
export function capabilitiesOf(name: string, kinds: ToolKinds): readonly Capability[] {
  const builtin = builtinCapabilities[name];
  if (builtin) return builtin;
  if (kinds.agentTools.has(name)) return agentToolCapabilities;
  return kinds.external.find((tool) => tool.name === name)?.capabilities ?? unclassifiedCapabilities;
}
