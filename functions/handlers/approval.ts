/** Lambda: opens a tool call's approval request, and stores the task token the loop waits on. */
import { wire } from '../adapters/wiring.js';
import { ApprovalStepInput, type RequestOutcome, awaitDecision, requestApproval } from '../core/approvals.js';
import { parseEvent } from './events.js';

const wiring = wire(process.env);

export async function handler(event: unknown): Promise<RequestOutcome | { toolUseId: string; waiting: true }> {
  const input = parseEvent(ApprovalStepInput, event);
  return input.step === 'request' ? requestApproval(input, wiring) : awaitDecision(input, wiring);
}
