/** Wakes a waiting state machine task through the Step Functions API (`SendTaskSuccess`). */
import { InvalidToken, type SFNClient, SendTaskSuccessCommand, TaskDoesNotExist, TaskTimedOut } from '@aws-sdk/client-sfn';
import type { TaskTokens } from '../../core/approvals/types.js';
import { guard } from './errors.js';
import { OrchestratorUnavailable } from './intake.js';

export class SfnTaskTokens implements TaskTokens {
  constructor(private readonly sfn: SFNClient) {}

  async resume(token: string, output: unknown): Promise<boolean> {
    try {
      await guard(
        'Resuming a waiting run',
        () => this.sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify(output) })),
        OrchestratorUnavailable,
      );
      return true;
    } catch (error) {
      // The wait is over (timed out, its execution stopped, or it waits on a newer token).
      if (error instanceof TaskTimedOut || error instanceof TaskDoesNotExist || error instanceof InvalidToken) return false;
      throw error;
    }
  }
}
