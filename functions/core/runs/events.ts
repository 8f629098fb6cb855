/**
 * The events Stepwise takes and emits (docs/events.md, "Events on the bus"), as zod schemas for producers and consumers.
 */
import * as z from 'zod';
import { Usage } from '../model/messages.js';
import { Phase, RunError, RunStatus } from './types.js';

export { RunRequestedDetail, runRequestedDetailType } from '../intake/request.js';
export { ApprovalRequestedDetail } from '../approvals/types.js';

export const eventSource = 'stepwise';
export const runSucceededDetailType = 'Stepwise Run Succeeded';
export const runFailedDetailType = 'Stepwise Run Failed';
/** A run was cancelled; announced once, however often the cancel is sent. */
export const runCancelledDetailType = 'Stepwise Run Cancelled';
/** A tool call waits for a reviewer; detail `ApprovalRequestedDetail`. */
export const approvalRequestedDetailType = 'Stepwise Approval Requested';

/** The detail of `Stepwise Run Succeeded`, `Stepwise Run Failed` and `Stepwise Run Cancelled` (source `stepwise`). */
export const RunCompletedDetail = z.object({
  runId: z.string(),
  status: RunStatus,
  phase: Phase,
  error: RunError.optional(),
  usage: Usage,
});
export type RunCompletedDetail = z.infer<typeof RunCompletedDetail>;
