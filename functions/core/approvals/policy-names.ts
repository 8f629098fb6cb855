/**
 * A run's approval policy checked against the tools its MCP servers list, at an agent's first step.
 */
import { ApprovalPolicyInvalid } from './types.js';
import { type ToolCatalog } from '../tools/external/types.js';
import { mcpServerOf, unlistedPolicyTools } from '../tools/external/names.js';
import type { InferenceDeps } from '../steps/types.js';

/** Stops the run when its approval policy names an MCP tool the run's catalog does not list (`unlistedPolicyTools`). */
export async function checkPolicyNames(catalog: ToolCatalog | undefined, runId: string, deps: InferenceDeps): Promise<void> {
  if (!catalog || !deps.approvals || !catalog.tools.some((tool) => mcpServerOf(tool.name) !== undefined)) return;
  const unlisted = unlistedPolicyTools(await deps.approvals.toolsFor(runId), catalog);
  if (!unlisted.length) return;
  const servers = new Set(unlisted.map(mcpServerOf));
  const offered = catalog.tools.filter((tool) => servers.has(mcpServerOf(tool.name))).map((tool) => tool.name);
  throw new ApprovalPolicyInvalid(
    `The run's approval policy names ${unlisted.join(', ')}, which ${unlisted.length > 1 ? 'are' : 'is'} not among the tools its MCP server lists (${offered.join(', ') || 'none'}); the run stops rather than let the tool it meant run without approval.`,
  );
}
