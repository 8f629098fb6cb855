/**
 * A deployment's agents and workflows, checked once where they are configured (`cdk synth`,
 * `npm run dev`, a function's start): an unknown tool or agent, agents that call each other in a
 * cycle, an invalid output schema or a name the built-ins hold stop it with one line naming the
 * definition and the field (docs/agents.md).
 */
import type * as z from 'zod';
import { approvableTool, policyTools } from '../approvals/policy.js';
import { toolNames } from '../tools/builtin/builtin.js';
import { mcpSeparator, type ExternalToolNames } from '../tools/external/types.js';
import { noExternalTools } from '../tools/external/names.js';
import { AgentConfigInvalid, type AgentRef } from '../agents/types.js';
import { schemaProblems } from '../output/answer.js';
import { builtinAgents, builtinWorkflows, refOf, reservedNames, versionOf } from './definition.js';
import { AgentDefinition, type Definitions, WorkflowDefinition, type WorkflowStep } from './types.js';

/** What a deployment configures: the JSON arrays of `agents` and `workflows`. */
export interface AgentConfig {
  agents?: unknown;
  workflows?: unknown;
}

/** What a definition may name besides the built-in tools and other agents. */
export interface AgentCatalogRules {
  external?: ExternalToolNames;
  /** The models a definition may name; any when absent. */
  allowedModels?: readonly string[];
}

/** One agent or workflow as `GET /agents` lists it. */
export interface AgentSummary {
  name: string;
  kind: 'agent' | 'workflow';
  description: string;
  version: string;
  tools: string[];
  model?: string;
  builtin: boolean;
  /** A workflow's steps. */
  steps?: WorkflowStep[];
}

/** How deep agents may call agents: a run of depth 3 may not start a child (DESIGN §12). */
export const maxAgentDepth = 3;

/** The deployment's agents (the built-ins first) and workflows, valid together. */
export class AgentCatalog implements Definitions {
  private constructor(
    private readonly agentsByName: ReadonlyMap<string, AgentDefinition>,
    private readonly workflowsByName: ReadonlyMap<string, WorkflowDefinition>,
  ) {}

  /** Checks a configuration; throws `AgentConfigInvalid` with one line naming the definition and field. */
  static from(config: AgentConfig = {}, rules: AgentCatalogRules = {}): AgentCatalog {
    const agents = parseList('agents', config.agents, AgentDefinition);
    const workflows = parseList('workflows', config.workflows, WorkflowDefinition);
    const agentsByName = new Map(builtinAgents.map((agent) => [agent.name, agent]));
    const workflowsByName = new Map(builtinWorkflows.map((workflow) => [workflow.name, workflow]));
    for (const [kind, list, byName] of [['agent', agents, agentsByName], ['workflow', workflows, workflowsByName]] as const) {
      for (const definition of list) {
        if (reservedNames.includes(definition.name)) invalid(`${kind} "${definition.name}": name is taken by a built-in (${reservedNames.join(', ')})`);
        if (agentsByName.has(definition.name) || workflowsByName.has(definition.name)) invalid(`${kind} "${definition.name}": name is defined twice`);
        (byName as Map<string, typeof definition>).set(definition.name, definition);
      }
    }
    const external = rules.external ?? noExternalTools;
    for (const agent of agents) checkAgent(agent, agentsByName, external, rules.allowedModels);
    checkCycles(agents);
    for (const workflow of workflows) checkWorkflow(workflow, agentsByName);
    return new AgentCatalog(agentsByName, workflowsByName);
  }

  /** An agent's definition. */
  agent(name: string): AgentDefinition | undefined {
    return this.agentsByName.get(name);
  }

  /** A workflow's definition. */
  workflow(name: string): WorkflowDefinition | undefined {
    return this.workflowsByName.get(name);
  }

  /** The agents' names, the built-ins first. */
  agentNames(): string[] {
    return [...this.agentsByName.keys()];
  }

  workflowNames(): string[] {
    return [...this.workflowsByName.keys()];
  }

  /** A definition with its version, as a run records it. */
  ref(name: string): AgentRef | undefined {
    const agent = this.agent(name);
    return agent && refOf(agent);
  }

  /** Every agent, then every workflow, as `GET /agents` lists them. */
  summaries(): AgentSummary[] {
    const builtin = new Set(reservedNames);
    return [
      ...[...this.agentsByName.values()].map((agent) => ({
        name: agent.name,
        kind: 'agent' as const,
        description: agent.description,
        version: versionOf(agent),
        tools: agent.tools,
        ...(agent.model ? { model: agent.model } : {}),
        builtin: builtin.has(agent.name),
      })),
      ...[...this.workflowsByName.values()].map((workflow) => ({
        name: workflow.name,
        kind: 'workflow' as const,
        description: workflow.description,
        version: versionOf(workflow),
        tools: [],
        builtin: builtin.has(workflow.name),
        steps: workflow.steps,
      })),
    ];
  }
}

function invalid(message: string): never {
  throw new AgentConfigInvalid(message);
}

/** Parses a JSON array of definitions; the first problem names the definition (by name when it has one) and the field. */
function parseList<T extends { name: string }>(kind: 'agents' | 'workflows', list: unknown, schema: z.ZodType<T>): T[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) invalid(`${kind}: must be a JSON array of definitions`);
  return list.map((item, index) => {
    const parsed = schema.safeParse(item);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const itemName = typeof item === 'object' && item !== null && typeof (item as { name?: unknown }).name === 'string' ? ` ("${(item as { name: string }).name}")` : '';
    const field = issue?.path.length ? issue.path.map(String).join('.') : '(the definition)';
    return invalid(`${kind}[${index}]${itemName}: ${field}: ${issue?.message ?? 'is invalid'}`);
  });
}

/** An MCP tool entry: `<server>__<tool>` or `<server>__*`. */
const mcpEntry = new RegExp(`^([a-zA-Z0-9-]{1,32})${mcpSeparator}(\\*|[a-zA-Z0-9_-]{1,64})$`);

/** Why a `tools` entry names nothing this deployment has, or undefined when it names something. */
function toolEntryProblem(entry: string, agents: ReadonlyMap<string, AgentDefinition>, external: ExternalToolNames): string | undefined {
  if (entry.startsWith('agent:')) {
    const callee = entry.slice('agent:'.length);
    return agents.has(callee) && callee !== 'architect' && callee !== 'coder'
      ? undefined
      : `names no agent this deployment has (${[...agents.keys()].filter((name) => name !== 'architect' && name !== 'coder').join(', ')})`;
  }
  if (entry === 'finish_plan') return 'finish_plan is the built-in Architect\'s; an agent answers with text or its output schema';
  if (toolNames.includes(entry) || external.lambdaTools.includes(entry)) return undefined;
  const mcp = mcpEntry.exec(entry);
  if (mcp?.[1] && external.mcpServers.includes(mcp[1])) return undefined;
  const servers = external.mcpServers.map((server) => `${server}__*`);
  return `is not a tool of this deployment (it has ${[...toolNames.filter((name) => name !== 'finish_plan'), ...external.lambdaTools, ...servers].join(', ')}, and agent:<name>)`;
}

function checkAgent(agent: AgentDefinition, agents: ReadonlyMap<string, AgentDefinition>, external: ExternalToolNames, allowedModels?: readonly string[]): void {
  const where = `agent "${agent.name}"`;
  const seen = new Set<string>();
  agent.tools.forEach((entry, index) => {
    if (seen.has(entry)) invalid(`${where}: tools[${index}] "${entry}" is listed twice`);
    seen.add(entry);
    const problem = toolEntryProblem(entry, agents, external);
    if (problem) invalid(`${where}: tools[${index}] "${entry}" ${problem}`);
  });
  if (agent.model && allowedModels && !allowedModels.includes(agent.model)) {
    invalid(`${where}: model "${agent.model}" is not one this deployment allows (${allowedModels.join(', ')})`);
  }
  const problems = agent.output ? schemaProblems(agent.output.schema) : [];
  if (problems[0]) invalid(`${where}: output.schema: ${problems[0]}`);
  const approvable = approvableTool(external);
  for (const tool of agent.approvals ? policyTools(agent.approvals) : []) {
    if (!approvable(tool)) invalid(`${where}: approvals names "${tool}", which is not a tool of this deployment`);
  }
}

/** Refuses agents that call each other in a cycle (an agent calling itself included), naming it. */
function checkCycles(agents: readonly AgentDefinition[]): void {
  const callees = new Map(agents.map((agent) => [agent.name, agent.tools.filter((t) => t.startsWith('agent:')).map((t) => t.slice('agent:'.length))]));
  const done = new Set<string>();
  const visit = (name: string, path: string[]): void => {
    const at = path.indexOf(name);
    if (at >= 0) invalid(`agents ${[...path.slice(at), name].map((n) => `"${n}"`).join(' → ')} call each other in a cycle`);
    if (done.has(name)) return;
    for (const callee of callees.get(name) ?? []) visit(callee, [...path, name]);
    done.add(name);
  };
  for (const agent of agents) visit(agent.name, []);
}

function checkWorkflow(workflow: WorkflowDefinition, agents: ReadonlyMap<string, AgentDefinition>): void {
  // Each agent of a run has one place (its conversation, its iterations): once per workflow.
  const used = new Set<string>();
  workflow.steps.forEach((step, index) => {
    const names = typeof step === 'string' ? [step] : step.parallel;
    for (const name of names) {
      if (!agents.has(name) || name === 'architect' || name === 'coder') {
        invalid(`workflow "${workflow.name}": steps[${index}] "${name}" names no agent this deployment has (${[...agents.keys()].filter((n) => n !== 'architect' && n !== 'coder').join(', ')})`);
      }
    }
    for (const name of names) {
      if (used.has(name)) invalid(`workflow "${workflow.name}": steps[${index}] "${name}" works in an earlier step already; an agent works once per workflow`);
      used.add(name);
    }
  });
}
