/**
 * What `npm run dev` prints of the events its local bus carries: one short line for each run that
 * ends and each call that waits for a reviewer, so a failed run reads as one line naming the run
 * and its error. Step Functions' own execution events, and anything else, print nothing: the run's
 * own event already says how it ended.
 */
import { ApprovalRequestedDetail, RunCompletedDetail, approvalRequestedDetailType, eventSource } from '../functions/core/runs/events.js';
import type { LocalEvent } from './runtime/event-bus.js';

/** The line for an event, or undefined for one not worth a line. */
export function eventLine(event: Pick<LocalEvent, 'source' | 'detailType' | 'detail'>): string | undefined {
  if (event.source !== eventSource) return undefined;
  if (event.detailType === approvalRequestedDetailType) {
    const waiting = ApprovalRequestedDetail.safeParse(event.detail);
    return waiting.success ? `run ${waiting.data.runId} waits for a decision on ${waiting.data.name} (${waiting.data.toolUseId})` : undefined;
  }
  const ended = RunCompletedDetail.safeParse(event.detail);
  if (!ended.success) return undefined;
  const { runId, status, error, usage } = ended.data;
  const tokens = `${usage.inputTokens} in, ${usage.outputTokens} out`;
  if (!error) return `run ${runId} ${status} (tokens: ${tokens})`;
  return `run ${runId} ${status}${error.agent ? ` (${error.agent})` : ''}: ${error.code}: ${oneLine(error.message)}`;
}

/** A message on one line, cut where it gets long. */
function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}
