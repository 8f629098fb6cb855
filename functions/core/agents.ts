/**
 * The agents: each one's system prompt, tools and opening message.
 */
import type { AgentName } from './conversation.js';
import { type ContentBlock, textBlock } from './messages.js';
import type { Run } from './runs.js';
import { calculator } from './tools/calculator.js';
import { editFile, listFiles, readFile, writeFile } from './tools/files.js';
import { type Tool, ToolRegistry } from './tools/registry.js';

export interface AgentProfile {
  name: AgentName;
  system: string;
  tools: ToolRegistry;
}

const workspaceRules = `The workspace is a private folder of files for this run. Paths are relative to its root \
(for example "src/app.ts"); absolute paths and ".." are refused. Files you write persist after the run and are \
what the user receives.`;

const singleSystem = `You are Stepwise, a careful assistant that completes the user's goal using tools.

How you work:
- Think about what the goal needs, then act with tools, then check what the tools returned before going on.
- Use the calculator for every arithmetic step instead of computing in your head.
- Read a file before you edit it. Prefer edit_file for small changes and write_file for new files.
- When a tool returns an error, read the message: it says what to change. Fix the input and try again, or choose another way.
- You may call several independent tools in one turn; they run in parallel.
- When the goal is done, answer with a short summary of what you did and the result. Do not call tools after that.

${workspaceRules}`;

/** The built-in tools, in the order the model sees them. */
export const builtinTools: readonly Tool[] = [calculator, readFile, writeFile, listFiles, editFile];

const builtins = new ToolRegistry(builtinTools);

const profiles: Partial<Record<AgentName, AgentProfile>> = {
  single: { name: 'single', system: singleSystem, tools: builtins },
};

/** The profile of an agent; fails loudly for an agent this build does not define. */
export function agentProfile(name: AgentName): AgentProfile {
  const profile = profiles[name];
  if (!profile) throw new Error(`No agent profile named "${name}".`);
  return profile;
}

/** The first user message of an agent's part in a run. */
export function openingMessage(run: Pick<Run, 'goal'>, _agent: AgentName): ContentBlock[] {
  return [textBlock(run.goal)];
}
