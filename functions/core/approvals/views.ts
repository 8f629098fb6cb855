/**
 * Approvals as `GET /runs/{runId}` shows them: the calls waiting, and the decisions made.
 */
import type { Approval, Decision, DecisionView, WaitingFor } from './types.js';

/** A decision's reason, message and whether it edited the input, as the views show them. */
export function notesOf(approval: Pick<Approval, 'reason' | 'message' | 'editedInput'>): { reason?: string; message?: string; edited?: true } {
  return {
    ...(approval.reason ? { reason: approval.reason } : {}),
    ...(approval.message ? { message: approval.message } : {}),
    ...(approval.editedInput ? { edited: true as const } : {}),
  };
}

/** The decided approvals of a run, in the order they were decided. */
export function decisionsOf(approvals: Approval[]): DecisionView[] {
  return approvals
    .filter((a): a is Approval & { decision: Decision } => a.decision !== undefined)
    .sort((a, b) => byTime(a.decidedAt ?? '', b.decidedAt ?? ''))
    .map((a) => ({
      toolUseId: a.toolUseId,
      name: a.name,
      decision: a.decision,
      ...notesOf(a),
      decidedAt: a.decidedAt ?? '',
      decidedBy: a.decidedBy ?? 'reviewer',
    }));
}

/** The undecided approvals of a running run, oldest first. */
export function waitingFor(approvals: Approval[]): WaitingFor[] {
  return approvals
    .filter((a) => !a.decision)
    .sort((a, b) => byTime(a.requestedAt, b.requestedAt))
    .map((a) => ({
      toolUseId: a.toolUseId,
      name: a.name,
      input: a.input,
      ...(a.inputTruncated ? { inputTruncated: true } : {}),
      requestedAt: a.requestedAt,
    }));
}

/** Orders ISO timestamps oldest first, for `sort`. */
function byTime(a: string, b: string): number {
  if (a < b) return -1;
  // Stryker disable next-line ConditionalExpression,EqualityOperator: V8's sort only asks whether a pair is out of order (< 0), so 1 and 0 order alike
  return a > b ? 1 : 0;
}
