/**
 * The names of external tools: `<server>__<tool>` for an MCP server's, the configured name for a
 * Lambda tool's, and which of them a deployment has.
 */
import { type ExternalToolNames, mcpSeparator, type ToolCatalog, toolNamePattern } from './types.js';

/** A deployment with no external tools. */
export const noExternalTools: ExternalToolNames = { mcpServers: [], lambdaTools: [] };

/** The names of a configuration's servers and Lambda tools. */
export function externalToolNames(config: { mcpServers: readonly { name: string }[]; lambdaTools: readonly { name: string }[] }): ExternalToolNames {
  return { mcpServers: config.mcpServers.map((server) => server.name), lambdaTools: config.lambdaTools.map((tool) => tool.name) };
}

/**
 * The external tools as the API and intake functions are told of them: names only, which approval
 * policies may use (`STEPWISE_MCP_SERVER_NAMES`, `STEPWISE_LAMBDA_TOOL_NAMES`); the local stack
 * tells its API the same way. (The stack sets them on those functions: lib/front-door.ts.)
 */
export function externalToolNamesEnvironment(names?: ExternalToolNames): Record<string, string> {
  return {
    ...(names?.mcpServers.length ? { STEPWISE_MCP_SERVER_NAMES: names.mcpServers.join(',') } : {}),
    ...(names?.lambdaTools.length ? { STEPWISE_LAMBDA_TOOL_NAMES: names.lambdaTools.join(',') } : {}),
  };
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

/** The server `<server>__*` names (every tool of it, those it lists later too); `undefined` for any other name. */
export function wholeServerOf(entry: string): string | undefined {
  const server = mcpServerOf(entry);
  return server !== undefined && entry === `${server}${mcpSeparator}*` ? server : undefined;
}

/** Whether a gate's or a rule's tool covers a call of `name`: the same name, or `<server>__*` and any tool of that server. */
export function coversTool(entry: string, name: string): boolean {
  if (entry === name) return true;
  const server = wholeServerOf(entry);
  return server !== undefined && name.length > entry.length - 1 && mcpServerOf(name) === server;
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
    // `<server>__*` names every tool the server lists, however many: it never names too much.
    return server !== undefined && wholeServerOf(name) === undefined && !listed.has(name) && !down.has(mcpSourceId(server));
  });
}

/** The name the model sees for an MCP server's tool; `undefined` when no valid name can be made. */
export function mcpToolName(server: string, tool: string): string | undefined {
  // MCP allows dots and slashes in tool names; Anthropic does not, so those become "_".
  const name = `${server}${mcpSeparator}${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  return toolNamePattern.test(name) ? name : undefined;
}
