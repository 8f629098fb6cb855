/**
 * Approvals as `GET /runs/{runId}` shows them: the calls waiting, and the decisions made; and as
 * `GET /runs` counts them, per run.
 */
import type { Run, RunPage, RunSummary } from '../runs/types.js';
import { policyTools } from './policy.js';
import type { Approval, ApprovalPolicy, ApprovalStore, Decision, DecisionView, WaitingFor } from './types.js';

/** A run with the tool calls that wait for a reviewer and the decisions made so far. */
export async function runWithApprovals(run: Run, store: Pick<ApprovalStore, 'list'>): Promise<Run & { waitingFor: WaitingFor[]; decisions: DecisionView[] }> {
  const approvals = mayStop(run.approvals) ? await store.list(run.runId) : [];
  // Only a running run can wait; the requests of an ended (e.g. cancelled) run are moot.
  const waiting = run.status === 'running' ? waitingFor(approvals) : [];
  return { ...run, waitingFor: waiting, decisions: decisionsOf(approvals) };
}

/** A page of a listing as `GET /runs` answers it: each run with the number of calls that wait for a reviewer. */
export async function summariesWithWaiting(items: RunPage['items'], store: Pick<ApprovalStore, 'list'>): Promise<RunSummary[]> {
  return Promise.all(
    items.map(async ({ approvals, owner: _owner, ...summary }) => {
      const gates = summary.status === 'running' && mayStop(approvals);
      return { ...summary, waitingFor: gates ? waitingFor(await store.list(summary.runId)).length : 0 };
    }),
  );
}

/** Whether a run's policy may stop calls (tools it gates, or tools its rules name), so it may have approvals to show. */
function mayStop(policy: ApprovalPolicy | undefined): boolean {
  return policy !== undefined && policyTools(policy).length > 0;
}

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
      ...(a.gate ? { gate: a.gate } : {}),
    }));
}

/** Orders ISO timestamps oldest first, for `sort`. */
function byTime(a: string, b: string): number {
  if (a < b) return -1;
  // Stryker disable next-line ConditionalExpression,EqualityOperator: V8's sort only asks whether a pair is out of order (< 0), so 1 and 0 order alike
  return a > b ? 1 : 0;
}
