/**
 * Memory at the two steps (docs/memory.md): the inference step offers the memory tool to the
 * agents of a run that asked for memory; the tool step runs its calls on the run's scope, and
 * marks what a call shows of memory as untrusted data (DESIGN §16): the model wrote it, maybe
 * after reading tool output, in this run or another.
 */
import type { ToolUseBlock, ToolResultBlock } from '../model/messages.js';
import type { ToolSpec } from '../model/types.js';
import { runMemory } from '../runs/controls.js';
import type { InferenceFeature, ToolDeps, ToolOrigin } from '../steps/hooks.js';
import type { ToolInput } from '../steps/types.js';
import { defaultToolLimits, inputJsonSchema, ToolRegistry } from '../tools/registry.js';
import { untrustedDataRules } from '../untrusted/mark.js';
import { memoryPrefix } from './scope.js';
import { memoryTool, memoryToolName, memoryToolType, readsMemory } from './tool.js';
import { defaultMemoryLimits } from './types.js';

/** The memory tool as the model is offered it: Anthropic's type, with its schema for providers that take none. */
export const memoryToolSpec: ToolSpec = {
  name: memoryToolName,
  description: memoryTool.description,
  inputSchema: inputJsonSchema(memoryTool),
  type: memoryToolType,
};

/** Offers the memory tool, last (the same bytes every step of a run), to the agents of a run with memory, with what untrusted marks mean. */
export const memoryFeature: InferenceFeature = {
  name: 'memory',
  request(step, request) {
    if (!step.run?.memory || request.tools.some((tool) => tool.name === memoryToolName)) return;
    request.tools.push(memoryToolSpec);
    if (!request.system.includes(untrustedDataRules)) request.system += `\n\n${untrustedDataRules}`;
  },
};

const registry = new ToolRegistry([memoryTool]);

/** Where a memory call's output comes from: memory content (untrusted, the team's), or Stepwise's own words. */
function originOf(call: ToolUseBlock): ToolOrigin {
  return readsMemory(call.input) ? { kind: 'memory', capabilities: ['untrusted', 'private'] } : { kind: 'builtin', capabilities: [] };
}

/**
 * Runs a call of the memory tool on the run's scope; `undefined` when the run has no memory (the
 * call is then answered as any unknown tool is).
 */
export async function runMemoryCall(call: ToolUseBlock, input: ToolInput, deps: ToolDeps): Promise<{ result: ToolResultBlock; ran: boolean; from: ToolOrigin } | undefined> {
  if (call.name !== memoryToolName || !deps.runs || !deps.memoryFor) return undefined;
  const run = await runMemory(input.runId, deps.runs);
  if (!run?.memory || !run.owner) return undefined;
  const store = deps.memoryFor(memoryPrefix(run.memory.scope, run.owner, run.sessionId));
  const context = {
    runId: input.runId,
    workspace: deps.workspaceFor(input.runId),
    limits: deps.limits ?? defaultToolLimits,
    memory: { scope: run.memory.scope, store, limits: deps.memoryLimits ?? defaultMemoryLimits },
  };
  const outcome = await registry.attempt(call, context);
  return { ...outcome, from: originOf(call) };
}
