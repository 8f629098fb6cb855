/**
 * What each agent is to the loop: its system prompt, its tools and opening message, made from its
 * definition (`definition.ts`). A run's agents follow the versions the run recorded, read from
 * the definition store once per warm function; runs made before agents were data follow the
 * built-ins.
 */
import { agentTool, calleesOf } from '../children/children.js';
import { builtinAgents, placeOf, refOf, workspaceRules } from '../definitions/definition.js';
import type { AgentDefinition } from '../definitions/types.js';
import { definitionFor } from './read.js';
import { type AgentDefinitionStore, AgentDefinitionMissing, type AgentName, type AgentProfile, type AgentRef } from './types.js';
import { builtinTool } from '../tools/builtin/builtin.js';
import { type ContentBlock, textBlock } from '../model/messages.js';
import { renderPlan } from '../plan/plan.js';
import { agentAt, type Run } from '../runs/types.js';
import type { Tool } from '../tools/types.js';
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

/** An agent's profile from its definition, with the tools that call the agents it may call. */
export function profileOf(definition: AgentDefinition, ref: AgentRef = refOf(definition), agentTools: readonly Tool[] = []): AgentProfile {
  const place = placeOf(definition.name);
  const builtin = builtinAgents.some((agent) => agent.name === definition.name);
  const own = definition.tools.flatMap((name) => builtinTool(name) ?? []);
  const external = definition.tools.filter((name) => !builtinTool(name) && !name.startsWith('agent:'));
  const finishTool = definition.tools.includes(finishPlan.name) ? finishPlan.name : undefined;
  return {
    name: place,
    definition: ref,
    system: own.some((tool) => fileTools.has(tool.name)) ? `${definition.instructions}\n\n${workspaceRules}` : definition.instructions,
    tools: new ToolRegistry([...own, ...agentTools]),
    agentTools: new Set(agentTools.map((tool) => tool.name)),
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

/** Profiles made from read definitions, by the agent's and its callees' versions (at most 100). */
const madeProfiles = new Map<string, AgentProfile>();

/**
 * The profile of the agent at `place` in a run whose agents are `agents` (the run record's): the
 * definition its version names, with the agents it may call at the versions the run recorded. A
 * run without them (made before agents were data) follows the built-in of its place.
 */
export async function profileFor(place: AgentName, agents: Run['agents'], store: AgentDefinitionStore | undefined): Promise<AgentProfile> {
  const ref = agentAt({ agents }, place);
  if (!ref) return agentProfile(place);
  const builtin = builtinProfiles.get(place);
  if (builtin?.definition?.version === ref.version && builtin.definition.name === ref.name) return builtin;
  const callees = calleesOf({ agents });
  const key = [ref, ...callees].map((r) => `${r.name}@${r.version}`).join(' ');
  const made = madeProfiles.get(key);
  if (made) return made;
  const definition = await definitionFor(ref, store);
  const called = definition.tools.filter((entry) => entry.startsWith('agent:')).map((entry) => entry.slice('agent:'.length));
  const tools = await Promise.all(
    callees
      .filter((callee) => called.includes(callee.name))
      .map(async (callee) => agentTool({ ...callee, description: (await definitionFor(callee, store)).description })),
  );
  const profile = profileOf(definition, ref, tools);
  if (madeProfiles.size >= 100) madeProfiles.delete(madeProfiles.keys().next().value ?? '');
  madeProfiles.set(key, profile);
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
