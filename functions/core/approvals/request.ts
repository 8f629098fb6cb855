/**
 * Human approval of risky tool calls. A run names the tools that need a reviewer's yes; when the
 * model calls one of them, the loop pauses on that call until a person decides, or until the
 * wait times out, which counts as a denial with reason `timeout`.
 *
 * The approval record is the source of truth. The state machine's task token only wakes the
 * loop; the tool step applies whatever the record says. So a lost or stale token, a decision
 * that lands before the token is stored, or a retried request never loses a decision, and a
 * decision is recorded once (a conditional write), whoever tries second gets a 409.
 */
import { loadCall } from '../conversation/conversation.js';
import { StepStateInvalid } from '../errors/errors.js';
import {
  announcedInputChars,
  type Approval,
  ApprovalDecided,
  type ApprovalDeps,
  approvalInputChars,
  type ApprovalRequestedDetail,
  type ApprovalStepInput,
  type RequestOutcome,
} from './types.js';
import { underGate } from './egress.js';
import { decisionFor } from './policy.js';

export const now = (clock?: () => Date) => (clock ?? (() => new Date()))().toISOString();

/**
 * Opens the approval request of one call (once, however often it runs) and returns the
 * announcement. A call that is decided, or already answered, needs no wait.
 */
export async function requestApproval(
  input: Extract<ApprovalStepInput, { step: 'request' }>,
  deps: ApprovalDeps,
): Promise<RequestOutcome> {
  const { conversationId, turn, call, index } = await loadCall(deps.conversations, input);
  if (turn.results[index]) return { decided: true };

  const shown = boundedInput(call.input);
  const standing = await deps.approvals.open({
    runId: input.runId,
    toolUseId: call.id,
    agent: input.agent,
    conversationId,
    seq: input.seq,
    name: call.name,
    ...shown,
    requestedAt: now(deps.clock),
  });
  if (standing.conversationId !== conversationId || standing.seq !== input.seq) {
    throw new StepStateInvalid(`Tool call id ${call.id} appears twice in run ${input.runId}; approvals are kept by tool call id.`);
  }
  if (standing.decision) return { decided: true };
  // A rule may decide it at once, recorded like a reviewer's decision; not a deployment's gate.
  const rule = underGate(standing, decisionFor(await deps.approvals.policyFor(input.runId), call));
  if (rule.action !== 'ask') {
    const { approval } = await deps.approvals.decide(input.runId, call.id, {
      decision: rule.action,
      decidedAt: now(deps.clock),
      decidedBy: rule.by ?? 'policy',
    });
    if (approval?.decision) return { decided: true };
  }
  return { decided: false, detail: announcement(standing) };
}

/** Stores the token the loop now waits on; throws `ApprovalDecided` when there is nothing to wait for. */
export async function awaitDecision(
  input: Extract<ApprovalStepInput, { step: 'await' }>,
  deps: Pick<ApprovalDeps, 'approvals'>,
): Promise<{ toolUseId: string; waiting: true }> {
  const outcome = await deps.approvals.attachToken(input.runId, input.toolUseId, input.token);
  if (outcome === 'missing') throw new StepStateInvalid(`Run ${input.runId} has no approval request for ${input.toolUseId}.`);
  if (outcome === 'decided') throw new ApprovalDecided(`Tool call ${input.toolUseId} is decided already; nothing to wait for.`);
  return { toolUseId: input.toolUseId, waiting: true };
}

function announcement(approval: Approval): ApprovalRequestedDetail {
  const json = typeof approval.input === 'string' && approval.inputTruncated ? approval.input : JSON.stringify(approval.input ?? {});
  const cut = approval.inputTruncated || json.length > announcedInputChars;
  return {
    runId: approval.runId,
    toolUseId: approval.toolUseId,
    agent: approval.agent,
    name: approval.name,
    input: cut ? `${json.slice(0, announcedInputChars)}…` : approval.input,
    ...(cut ? { inputTruncated: true } : {}),
    requestedAt: approval.requestedAt,
    ...(approval.gate ? { gate: approval.gate } : {}),
  };
}

/** A call's input as the reviewer sees it: whole, or its JSON cut when it is long. */
export function boundedInput(input: unknown): Pick<Approval, 'input' | 'inputTruncated'> {
  const json = JSON.stringify(input ?? {});
  if (json.length <= approvalInputChars) return { input: input ?? {} };
  return { input: `${json.slice(0, approvalInputChars)}…`, inputTruncated: true };
}
