/**
 * What each agent is to the loop: its system prompt, its tools and opening message, made from its
 * definition (`definition.ts`). A run's agents follow the versions the run recorded, read from
 * the definition store once per warm function; runs made before agents were data follow the
 * built-ins.
 */
import { builtinAgents, placeOf, refOf, workspaceRules } from '../definitions/definition.js';
import { AgentDefinition } from '../definitions/types.js';
import { type AgentDefinitionStore, AgentDefinitionMissing, type AgentName, type AgentProfile, type AgentRef } from './types.js';
import { builtinTool } from '../tools/builtin/builtin.js';
import { type ContentBlock, textBlock } from '../model/messages.js';
import { renderPlan } from '../plan/plan.js';
import type { Run } from '../runs/types.js';
import { finishPlan } from '../tools/builtin/finish-plan.js';
import { editFile, listFiles, readFile, writeFile } from '../tools/builtin/files.js';
import { mcpSeparator } from '../tools/external/types.js';
import { ToolRegistry } from '../tools/registry.js';

const fileTools = new Set([readFile, writeFile, listFiles, editFile].map((tool) => tool.name));

/** Whether an entry of an agent's `tools` covers an external tool: its name, or `<server>__*` for every tool of the server. */
function covers(entry: string, tool: { name: string; source: string }): boolean {
  if (entry === tool.name) return true;
  return entry.endsWith(`${mcpSeparator}*`) && tool.source === `mcp:${entry.slice(0, -(mcpSeparator.length + 1))}`;
}

/** The source of an external entry of an agent's tools: `mcp:<server>` for `<server>__…`, else `lambda`. */
function sourceOf(entry: string): string {
  const at = entry.indexOf(mcpSeparator);
  return at > 0 ? `mcp:${entry.slice(0, at)}` : 'lambda';
}

/** An agent's profile from its definition. */
export function profileOf(definition: AgentDefinition, ref: AgentRef = refOf(definition)): AgentProfile {
  const place = placeOf(definition.name);
  const builtin = builtinAgents.some((agent) => agent.name === definition.name);
  const own = definition.tools.flatMap((name) => builtinTool(name) ?? []);
  const external = definition.tools.filter((name) => !builtinTool(name) && !name.startsWith('agent:'));
  const finishTool = definition.tools.includes(finishPlan.name) ? finishPlan.name : undefined;
  return {
    name: place,
    definition: ref,
    system: own.some((tool) => fileTools.has(tool.name)) ? `${definition.instructions}\n\n${workspaceRules}` : definition.instructions,
    tools: new ToolRegistry(own),
    // The built-ins see the external tools whose configuration names them (`agents`); a team's
    // agents, the ones their definition lists.
    hasExternal: builtin ? (tool) => tool.agents.includes(place) : (tool) => external.some((entry) => covers(entry, tool)),
    usesSource: builtin ? (down) => down.agents.includes(place) : (down) => external.some((entry) => sourceOf(entry) === down.source),
    ...(finishTool ? { finishTool } : {}),
    answersRun: finishTool === undefined,
    ...(definition.model ? { model: definition.model } : {}),
    ...(definition.maxTokens ? { maxTokens: definition.maxTokens } : {}),
  };
}

const builtinProfiles = new Map(builtinAgents.map((agent) => [placeOf(agent.name), profileOf(agent)]));

/** The profile of a built-in agent by its place in a run (`single`, `architect`, `coder`). */
export function agentProfile(place: AgentName): AgentProfile {
  const profile = builtinProfiles.get(place);
  if (!profile) throw new AgentDefinitionMissing(`No built-in agent works as "${place}"; the run's definition names it.`);
  return profile;
}

/** Definitions read from the store, by `<name>@<version>`: a version never changes, so a warm function keeps it (at most 100). */
const readDefinitions = new Map<string, AgentProfile>();

/**
 * The profile of the agent at `place` in a run that recorded `ref`: the built-in when it is the
 * same version, else the stored version. A run without a reference (made before agents were data)
 * follows the built-in of its place.
 */
export async function profileFor(place: AgentName, ref: AgentRef | undefined, store: AgentDefinitionStore | undefined): Promise<AgentProfile> {
  if (!ref) return agentProfile(place);
  const builtin = builtinProfiles.get(place);
  if (builtin?.definition?.version === ref.version && builtin.definition.name === ref.name) return builtin;
  const key = `${ref.name}@${ref.version}`;
  const known = readDefinitions.get(key);
  if (known) return known;
  const stored = store ? await store.get(ref) : undefined;
  if (stored === undefined) throw new AgentDefinitionMissing(`Version ${ref.version} of agent "${ref.name}" is not stored.`);
  const profile = profileOf(AgentDefinition.parse(stored), ref);
  if (readDefinitions.size >= 100) readDefinitions.delete(readDefinitions.keys().next().value ?? '');
  readDefinitions.set(key, profile);
  return profile;
}

/**
 * The first user message of an agent's part in a run: the goal; for the Coder the plan too; for
 * an agent of a workflow's later step, the answers of the step before it (DESIGN §12).
 */
export function openingMessage(run: Pick<Run, 'goal' | 'plan' | 'agents' | 'agentResults'>, agent: AgentName): ContentBlock[] {
  const step = run.agents?.find((a) => a.place === agent)?.step;
  if (agent !== 'coder' && step !== undefined && step > 0) {
    const before = (run.agents ?? []).filter((a) => a.step === step - 1);
    const answers = before.map(({ place }) => {
      const result = run.agentResults?.[place];
      const answer = result?.output ? JSON.stringify(result.output, null, 2) : (result?.response ?? '(no answer)');
      return `The answer of ${place}:\n${answer}`;
    });
    return [textBlock(`The user's goal:\n${run.goal}\n\n${answers.join('\n\n')}\n\nContinue the work from here.`)];
  }
  if (agent !== 'coder') return [textBlock(run.goal)];
  if (!run.plan) throw new Error('The Coder cannot start: the run has no plan.');
  return [
    textBlock(
      `The user's goal:\n${run.goal}\n\nThe Architect's plan:\n${renderPlan(run.plan)}\n\nCarry out this plan in the workspace.`,
    ),
  ];
}
