/**
 * What the MCP tools say in words (docs/mcp.md): a short summary of a route's answer, for the
 * model or person reading the tool result. Each summary carries the ids the next call needs
 * (run id, tool call ids, the next cursor), so a client that shows text only loses nothing it
 * must act on; the whole answer is the result's `structuredContent`.
 */
import type { DecisionRecorded } from '../core/approvals/types.js';
import type { RunSummary } from '../core/runs/types.js';
import type { ErrorBody, RunView } from './schemas.js';

/** A run's answer is quoted up to this many characters; `structuredContent` has all of it. */
export const quotedAnswerChars = 4_000;

/** What a run is doing, in one line: also each progress notification's message. */
export function runLine(run: Pick<RunView, 'runId' | 'status' | 'phase' | 'currentAgent' | 'iterations' | 'waitingFor'>): string {
  const iterations = Object.entries(run.iterations)
    .map(([agent, n]) => `${agent} ${n}`)
    .join(', ');
  const at = [`phase ${run.phase}`, ...(run.currentAgent ? [`agent ${run.currentAgent}`] : []), ...(iterations ? [`iterations: ${iterations}`] : [])];
  return `Run ${run.runId} is ${run.status} (${at.join('; ')}).`;
}

/** A run, as `get_run` (and a waited `start_run`) reads it. */
export function runText(run: RunView): string {
  const lines = [runLine(run)];
  for (const call of run.waitingFor) {
    lines.push(`Waiting for a reviewer: ${call.name} (toolUseId ${call.toolUseId}); decide with decide_approval.`);
  }
  if (run.error) lines.push(`Error ${run.error.code}: ${run.error.message}`);
  if (run.result) lines.push('', quoted(run.result.response));
  return lines.join('\n');
}

/** A run that was accepted (`start_run`, `cancel_run`). */
export function acceptedText(answer: { runId: string; status: string; phase: string }, verb: 'started' | 'cancelled'): string {
  return `Run ${answer.runId} ${verb} (status ${answer.status}, phase ${answer.phase}).${verb === 'started' ? ' Follow it with get_run.' : ''}`;
}

/** A page of runs (`list_runs`). */
export function runsText(page: { items: RunSummary[]; nextCursor?: string | undefined }): string {
  if (page.items.length === 0) return 'No runs.';
  const lines = page.items.map((run) => {
    const waiting = run.waitingFor ? `, ${run.waitingFor} waiting for a reviewer` : '';
    return `- ${run.runId}: ${run.status} (${run.phase}${waiting}), ${run.createdAt}: ${oneLine(run.goal)}`;
  });
  if (page.nextCursor) lines.push(`More: call list_runs with cursor ${page.nextCursor}`);
  return lines.join('\n');
}

/** A recorded decision (`decide_approval`). */
export function decisionText(decision: DecisionRecorded): string {
  return `Recorded: ${decision.decision} of tool call ${decision.toolUseId} in run ${decision.runId}, by ${decision.decidedBy}. The run goes on.`;
}

/** A route's refusal: its code and message, and each field at fault. */
export function errorText(status: number, body: unknown): string {
  const error = (body as Partial<ErrorBody> | undefined)?.error;
  if (!error) return `The request failed (HTTP ${status}).`;
  const issues = (error.issues ?? []).map((issue) => `- ${issue.path || '(body)'}: ${issue.message}`);
  return [`${error.code}: ${error.message}`, ...issues].join('\n');
}

function quoted(text: string): string {
  return text.length <= quotedAnswerChars ? text : `${text.slice(0, quotedAnswerChars)}… (${text.length - quotedAnswerChars} more characters in structuredContent.result.response)`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
