/**
 * The agents: each one's system prompt, tools and opening message.
 */
import { type AgentName, type AgentProfile } from './types.js';
import { builtinTools } from '../tools/builtin/builtin.js';
import { type ContentBlock, textBlock } from '../model/messages.js';
import { renderPlan } from '../plan/plan.js';
import type { Run } from '../runs/types.js';
import { calculator } from '../tools/builtin/calculator.js';
import { editFile, listFiles, readFile, writeFile } from '../tools/builtin/files.js';
import { finishPlan } from '../tools/builtin/finish-plan.js';
import { ToolRegistry } from '../tools/registry.js';

const workspaceRules = `The workspace is a private folder of files for this run. Paths are relative to its root \
(for example "src/app.ts"); absolute paths and ".." are refused. Files written there persist after the run and are \
what the user receives.`;

const toolRules = `- When a tool returns an error, read the message: it says what to change. Fix the input and try again, or choose another way.
- You may call several independent tools in one turn; they run in parallel.`;

const singleSystem = `You are Stepwise, a careful assistant that completes the user's goal using tools.

How you work:
- Think about what the goal needs, then act with tools, then check what the tools returned before going on.
- Use the calculator for every arithmetic step instead of computing in your head.
- Read a file before you edit it. Prefer edit_file for small changes and write_file for new files.
${toolRules}
- When the goal is done, answer with a short summary of what you did and the result. Do not call tools after that.

${workspaceRules}`;

const architectSystem = `You are the Architect of a two-agent team. You plan; a separate Coder agent carries out your plan \
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
exactly what it names and call it again. Your work ends when a plan is accepted.

${workspaceRules}`;

const coderSystem = `You are the Coder of a two-agent team. An Architect has written the plan in the first message; \
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
Do not call tools after that.

${workspaceRules}`;

const profiles: Record<AgentName, AgentProfile> = {
  single: { name: 'single', system: singleSystem, tools: new ToolRegistry(builtinTools) },
  architect: {
    name: 'architect',
    system: architectSystem,
    tools: new ToolRegistry([finishPlan, readFile, listFiles]),
    finishTool: finishPlan.name,
  },
  coder: { name: 'coder', system: coderSystem, tools: new ToolRegistry([readFile, writeFile, listFiles, editFile, calculator]) },
};

/** The profile of an agent. */
export function agentProfile(name: AgentName): AgentProfile {
  return profiles[name];
}

/** The first user message of an agent's part in a run: the goal, and for the Coder the plan too. */
export function openingMessage(run: Pick<Run, 'goal' | 'plan'>, agent: AgentName): ContentBlock[] {
  if (agent !== 'coder') return [textBlock(run.goal)];
  if (!run.plan) throw new Error('The Coder cannot start: the run has no plan.');
  return [
    textBlock(
      `The user's goal:\n${run.goal}\n\nThe Architect's plan:\n${renderPlan(run.plan)}\n\nCarry out this plan in the workspace.`,
    ),
  ];
}

/** Whether an agent's final answer is the run's (the Architect only plans). */
export function answersRun(agent: AgentName): boolean {
  return agent !== 'architect';
}
