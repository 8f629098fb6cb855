/**
 * The content hash that versions a definition, and the built-in agents and workflow, which are
 * definitions in the same format as a team's (DESIGN §12; docs/agents.md).
 */
import { createHash } from 'node:crypto';
import type { AgentRef } from '../agents/types.js';
import type { AgentDefinition, WorkflowDefinition } from './types.js';

/** The version of a definition: the first 12 hex digits of the SHA-256 of its JSON, keys sorted at every depth. */
export function versionOf(definition: AgentDefinition | WorkflowDefinition): string {
  return createHash('sha256').update(JSON.stringify(sortedKeys(definition))).digest('hex').slice(0, 12);
}

/** The reference a run keeps to a definition. */
export function refOf(definition: AgentDefinition): AgentRef {
  return { name: definition.name, version: versionOf(definition) };
}

/** A JSON value with the keys of every object in order, so equal values serialize alike. */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

const toolRules = `- When a tool returns an error, read the message: it says what to change. Fix the input and try again, or choose another way.
- You may call several independent tools in one turn; they run in parallel.`;

/** The deployment's rules appended to the instructions of an agent with file tools. */
export const workspaceRules = `The workspace is a private folder of files for this run. Paths are relative to its root \
(for example "src/app.ts"); absolute paths and ".." are refused. Files written there persist after the run and are \
what the user receives.`;

/** The built-in agents: `assistant` (`mode: "single"`), and the Architect and Coder of `plan-and-build`. */
export const builtinAgents: readonly AgentDefinition[] = [
  {
    name: 'assistant',
    description: 'Completes a goal with a calculator and the run\'s workspace of files.',
    instructions: `You are Stepwise, a careful assistant that completes the user's goal using tools.

How you work:
- Think about what the goal needs, then act with tools, then check what the tools returned before going on.
- Use the calculator for every arithmetic step instead of computing in your head.
- Read a file before you edit it. Prefer edit_file for small changes and write_file for new files.
${toolRules}
- When the goal is done, answer with a short summary of what you did and the result. Do not call tools after that.`,
    tools: ['calculator', 'read_file', 'write_file', 'list_files', 'edit_file'],
  },
  {
    name: 'architect',
    description: 'Plans the work on the workspace as steps for the Coder, and submits the plan with finish_plan.',
    instructions: `You are the Architect of a two-agent team. You plan; a separate Coder agent carries out your plan \
afterwards, step by step, with file tools (read_file, write_file, edit_file, list_files) and a calculator. You do not \
write files yourself.

How you plan:
- Start by understanding the goal. If the workspace may already hold files, look with list_files and read_file.
- Decide the smallest set of files and changes that fully achieves the goal. Name every file by its exact path.
- Write steps the Coder can follow without guessing: one concrete change per step, in dependency order, each with a \
clear description, an action (such as "create_file", "edit_file", "verify") and parameters such as { "path": ... }.
- Include the key content or interfaces a step must produce (function names, signatures, formats), not vague intentions.
- End with a verification step when it helps (for example reading a file back to check it).
${toolRules}

When the plan is complete, call finish_plan once with { goal, steps }. If it reports a problem with the plan, fix \
exactly what it names and call it again. Your work ends when a plan is accepted.`,
    tools: ['finish_plan', 'read_file', 'list_files'],
  },
  {
    name: 'coder',
    description: 'Carries out the Architect\'s plan in the workspace and summarizes what it changed.',
    instructions: `You are the Coder of a two-agent team. An Architect has written the plan in the first message; \
carry it out in the workspace, carefully and completely.

How you work:
- Follow the steps in order. For each, make the change with the tools, then check the result before moving on.
- Read a file before you edit it. Use edit_file for targeted changes (old_string must match exactly once) and \
write_file for new files or full rewrites.
- Write complete, working content: no placeholders, no "TODO", no elided sections.
- If a step is impossible or wrong, do the closest correct thing and say so in your final answer.
- Use the calculator for arithmetic.
${toolRules}
- When every step is done, answer with a short summary: what you changed, file by file, and anything you could not do. \
Do not call tools after that.`,
    tools: ['read_file', 'write_file', 'list_files', 'edit_file', 'calculator'],
  },
];

/** The built-in workflow of `mode: "multi"`: the Architect plans, the Coder carries the plan out. */
export const builtinWorkflows: readonly WorkflowDefinition[] = [
  { name: 'plan-and-build', description: 'The Architect plans the work as steps; the Coder carries them out in the workspace.', steps: ['architect', 'coder'] },
];

/** The built-in agents that work only as the steps of `plan-and-build`: a request, a workflow or an agent's tools cannot name them alone. */
export const workflowOnlyAgents: readonly string[] = ['architect', 'coder'];

/** Names a team's definitions may not take: the built-ins' and the modes'. */
export const reservedNames: readonly string[] = [...builtinAgents.map((a) => a.name), ...builtinWorkflows.map((w) => w.name), 'single', 'multi'];

/** An agent's place in a run: its name, but `single` for the built-in assistant (as runs have always recorded it). */
export function placeOf(agentName: string): string {
  return agentName === 'assistant' ? 'single' : agentName;
}

/** The tool name under which an agent is offered to another (`agent:<name>` in its tools): `agent_<name>`, `-` as `_`. */
export function agentToolName(agentName: string): string {
  return `agent_${agentName.replaceAll('-', '_')}`.slice(0, 64);
}
