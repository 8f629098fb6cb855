/**
 * The tool step of the agent loop: run one call of a stored assistant message, store its result;
 * idempotent under retry (invariant 3, docs/ARCHITECTURE.md). A fixed pipeline, load call →
 * before-tool → run → after-tool → store; approvals and the size of a result attach at its hook
 * points (`hooks.ts`, in the order of `features.ts`).
 */
import { agentProfile, profileFor } from '../agents/profiles.js';
import type { AgentProfile } from '../agents/types.js';
import { runAgents, runOwner } from '../runs/controls.js';
import { loadCall } from '../conversation/conversation.js';
import { type ToolResultBlock, type ToolUseBlock, toolResult } from '../model/messages.js';
import { defaultToolLimits } from '../tools/registry.js';
import { toolFeatures } from './features.js';
import type { ToolCall, ToolDeps, ToolOrigin, ToolOutcome } from './hooks.js';
import { unclassifiedCapabilities } from '../tools/external/types.js';
import { agentToolCapabilities, builtinCapabilities } from '../untrusted/capabilities.js';
import { runMemoryCall } from '../memory/feature.js';
import type { ToolInput, ToolStepResult } from './types.js';

/**
 * One tool step: run one call of a stored assistant message and store its result.
 * A stored result is returned without running the tool again.
 */
export async function toolStep(input: ToolInput, deps: ToolDeps): Promise<ToolStepResult> {
  const features = deps.features ?? toolFeatures;
  const { conversationId, turn, call, index } = await loadCall(deps.conversations, input);
  const existing = turn.results[index];
  if (existing) return { toolUseId: call.id, isError: existing.is_error === true };

  const step: ToolCall = { input, deps, conversationId, turn, index, call };
  for (const feature of features) await feature.beforeTool?.(step);
  // A call a feature answered (a denial) does not run.
  const { result, ran, from } = step.answer ? { result: step.answer, ran: false, from: undefined } : await run(step.call, input, deps);
  const outcome: ToolOutcome = { ...step, result, ran, ...(from ? { from } : {}) };
  for (const feature of features) await feature.afterTool?.(outcome);

  const stored = await deps.conversations.putResult(conversationId, input.seq, index, outcome.result, {
    ...(outcome.fullOutput !== undefined ? { fullOutput: outcome.fullOutput } : {}),
    ...(ran ? {} : { ran }),
  });
  return { toolUseId: call.id, isError: stored.is_error === true };
}

/** Runs the call: a built-in tool of the agent, or one of the run's external tools; says where its output came from. */
async function run(call: ToolUseBlock, input: ToolInput, deps: ToolDeps): Promise<{ result: ToolResultBlock; ran: boolean; from: ToolOrigin }> {
  const memory = await runMemoryCall(call, input, deps);
  if (memory) return memory;
  const profile = await profileOf(input, deps);
  const registry = deps.tools ? deps.tools(input.agent) : profile.tools;
  // A name the built-in tools do not know may be one of the run's external tools; the agent runs only those it has.
  const catalog = !registry.get(call.name) && deps.externalTools ? await deps.externalTools.stored(input.runId) : undefined;
  const external = catalog?.tools.filter((tool) => profile.hasExternal(tool)) ?? [];
  const target = external.find((tool) => tool.name === call.name);
  if (target && deps.externalTools) {
    // The tool acts for the run's owner and tenant, and learns who that is (docs/tools.md, "MCP servers and Lambda tools").
    const owner = deps.runs ? await runOwner(input.runId, deps.runs) : undefined;
    const outcome = await deps.externalTools.call(target, call.input, { runId: input.runId, toolUseId: call.id, ...(owner ? { owner } : {}) });
    const from: ToolOrigin = { kind: 'external', capabilities: target.capabilities ?? unclassifiedCapabilities };
    return { result: toolResult(call.id, outcome.content, outcome.isError), ran: outcome.ran !== false, from };
  }
  const context = {
    runId: input.runId,
    workspace: deps.workspaceFor(input.runId),
    limits: deps.limits ?? defaultToolLimits,
    ...(deps.plans ? { plans: deps.plans } : {}),
    ...(deps.runs ? { children: deps.runs } : {}),
  };
  const from: ToolOrigin = profile.agentTools.has(call.name)
    ? { kind: 'agent', capabilities: agentToolCapabilities }
    : { kind: 'builtin', capabilities: builtinCapabilities[call.name] ?? [] };
  return { ...(await registry.attempt(call, context, external.map((tool) => tool.name))), from };
}

/** The profile of the step's agent: the definition its run recorded (the built-in of its place for older runs). */
async function profileOf(input: ToolInput, deps: ToolDeps): Promise<AgentProfile> {
  if (!deps.runs) return agentProfile(input.agent);
  const agents = await runAgents(input.runId, deps.runs);
  return profileFor(input.agent, agents, deps.agentStore);
}
