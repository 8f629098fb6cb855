/** Lambda: opens a tool call's approval request, and stores the task token the loop waits on. */
import { ApprovalStepInput, type RequestOutcome } from '../core/approvals/types.js';
import { awaitDecision, requestApproval } from '../core/approvals/request.js';
import { instrumented, logger, stepKeys } from '../adapters/aws/telemetry.js';
import { wire } from '../wiring/wire.js';
import { parseEvent } from '../core/steps/input.js';

const wiring = wire(process.env);

export async function handler(event: unknown): Promise<RequestOutcome | { toolUseId: string; waiting: true }> {
  return instrumented(stepKeys(event), async () => {
    const input = parseEvent(ApprovalStepInput, event);
    const outcome = input.step === 'request' ? await requestApproval(input, wiring) : await awaitDecision(input, wiring);
    logger.info(input.step === 'request' ? 'Approval requested' : 'Waiting for a decision');
    return outcome;
  });
}
