/**
 * What a gated call's tool step does with its approval: settle it (a wait that timed out is a
 * denial), and tell the model what the reviewer decided.
 */
import { StepStateInvalid } from '../errors/errors.js';
import type { Approval, ApprovalStore, Decision } from './types.js';
import { now } from './request.js';

/**
 * The decision that applies to a gated call when its tool step runs. A call still undecided
 * here is one whose wait timed out: it is denied with reason `timeout`, once, so a reviewer who
 * decides later is told it was decided.
 */
export async function settleApproval(
  runId: string,
  toolUseId: string,
  deps: { approvals: Pick<ApprovalStore, 'get' | 'decide'>; clock?: () => Date },
): Promise<Approval & { decision: Decision }> {
  const record = await deps.approvals.get(runId, toolUseId);
  if (!record) throw new StepStateInvalid(`Tool call ${toolUseId} of run ${runId} needs approval, but none was requested.`);
  const settled = record.decision
    ? record
    : (await deps.approvals.decide(runId, toolUseId, { decision: 'deny', reason: 'timeout', decidedAt: now(deps.clock), decidedBy: 'timeout' }))
        .approval;
  if (!settled?.decision) throw new StepStateInvalid(`The approval of ${toolUseId} in run ${runId} could not be settled.`);
  return { ...settled, decision: settled.decision };
}

/** The `is_error` tool result text the model gets for a denied call: the reviewer's message, else the reason. */
export function denialMessage(approval: Pick<Approval, 'reason' | 'decidedBy' | 'message'>): string {
  const said = approval.message ?? approval.reason;
  const why =
    approval.decidedBy === 'timeout'
      ? 'A reviewer denied this tool call: timeout (no reviewer decided in time).'
      : said
        ? `A reviewer denied this tool call: ${said}`
        : 'A reviewer denied this tool call.';
  return `${why}\nThe call was not run. Do not repeat it unchanged; choose another way or explain what you need.`;
}

/**
 * The result the model reads for an approved call: a note that a reviewer changed its input
 * (with the input it ran with; the model's own call stays as it wrote it, invariant 12), the
 * tool's output, then the reviewer's message.
 */
export function approvedResult(content: string, approval: Pick<Approval, 'editedInput' | 'message'>): string {
  const { before, after } = reviewerNotes(approval);
  return `${before}${content}${after}`;
}

/** What `approvedResult` puts before and after the tool's output, so a later feature can tell the two apart. */
export function reviewerNotes(approval: Pick<Approval, 'editedInput' | 'message'>): { before: string; after: string } {
  return {
    before: approval.editedInput ? `A reviewer edited this call's input before it ran; it ran with: ${JSON.stringify(approval.editedInput)}\n\n` : '',
    after: approval.message ? `\n\nMessage from the reviewer: ${approval.message}` : '',
  };
}
