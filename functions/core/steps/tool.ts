/** The tool step of the agent loop: run one call of a stored assistant message, store its result; idempotent under retry (invariant 3, docs/ARCHITECTURE.md). */
import { agentProfile } from '../agents/profiles.js';
import { type Approval } from '../approvals/types.js';
import { approvedResult, denialMessage, settleApproval } from '../approvals/gate.js';
import { loadCall } from '../conversation/conversation.js';
import { StepStateInvalid } from '../errors/errors.js';
import { type ToolResultBlock, toolResult } from '../model/messages.js';
import type { AgentName } from '../agents/types.js';
import { defaultToolLimits } from '../tools/registry.js';
import type { ToolInput } from './types.js';
import type { ToolStepResult } from './types.js';
import type { ToolDeps } from './types.js';

export const defaultMaxResultChars = 30_000;

/**
 * One tool step: run one call of a stored assistant message and store its result.
 * A stored result is returned without running the tool again.
 */
export async function toolStep(input: ToolInput, deps: ToolDeps): Promise<ToolStepResult> {
  const { conversationId, turn, call: asked, index } = await loadCall(deps.conversations, input);
  let call = asked;

  const existing = turn.results[index];
  if (existing) return { toolUseId: call.id, isError: existing.is_error === true };

  let approved: Approval | undefined;
  if (input.needsApproval) {
    if (!deps.approvals) throw new StepStateInvalid(`Tool call ${call.id} needs approval, but this tool step has no approval store.`);
    const approval = await settleApproval(input.runId, call.id, { approvals: deps.approvals, ...(deps.clock ? { clock: deps.clock } : {}) });
    if (approval.decision === 'deny') {
      const denied = toolResult(call.id, denialMessage(approval), true);
      const stored = await deps.conversations.putResult(conversationId, input.seq, index, denied, { ran: false });
      // Stryker disable next-line ConditionalExpression: the stored result of a denied call is a denial, an error, whichever attempt stored it
      return { toolUseId: call.id, isError: stored.is_error === true };
    }
    approved = approval;
    // Run with the reviewer's input; the stored call stays as the model wrote it (invariant 12).
    if (approval.editedInput) call = { ...call, input: approval.editedInput };
  }

  const registry = (deps.tools ?? ((agent: AgentName) => agentProfile(agent).tools))(input.agent);
  // A name the built-in tools do not know may be one of the run's external tools.
  const catalog = !registry.get(call.name) && deps.externalTools ? await deps.externalTools.stored(input.runId) : undefined;
  const external = catalog?.tools.filter((tool) => tool.agents.includes(input.agent)) ?? [];
  const target = external.find((tool) => tool.name === call.name);
  let result: ToolResultBlock;
  let ran: boolean;
  if (target && deps.externalTools) {
    const outcome = await deps.externalTools.call(target, call.input, { runId: input.runId, toolUseId: call.id });
    result = toolResult(call.id, outcome.content, outcome.isError);
    ran = outcome.ran !== false;
  } else {
    ({ result, ran } = await registry.attempt(
      call,
      {
        runId: input.runId,
        workspace: deps.workspaceFor(input.runId),
        limits: deps.limits ?? defaultToolLimits,
        ...(deps.plans ? { plans: deps.plans } : {}),
      },
      external.map((tool) => tool.name),
    ));
  }
  if (approved && (approved.editedInput || approved.message)) result = { ...result, content: approvedResult(result.content, approved) };
  const view = capResult(result, deps.maxResultChars ?? defaultMaxResultChars);
  const stored = await deps.conversations.putResult(
    conversationId,
    input.seq,
    index,
    view,
    { ...(view === result ? {} : { fullOutput: result.content }), ...(ran ? {} : { ran }) },
  );
  return { toolUseId: call.id, isError: stored.is_error === true };
}

/** Cuts an over-long tool output to what the model should see, saying so. */
export function capResult(result: ToolResultBlock, maxChars: number): ToolResultBlock {
  if (result.content.length <= maxChars) return result;
  const note = `\n\n[Output truncated: showing the first ${maxChars} of ${result.content.length} characters; the full output is stored with the run.]`;
  return { ...result, content: result.content.slice(0, maxChars) + note };
}
