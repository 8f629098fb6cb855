/** Starts the orchestrator through the Step Functions API, named after the run. */
import { ExecutionAlreadyExists, type SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { OrchestratorInput, RunStarter } from '../core/intake.js';

export class SfnRunStarter implements RunStarter {
  constructor(
    private readonly sfn: SFNClient,
    private readonly stateMachineArn: string,
  ) {}

  async start(input: OrchestratorInput): Promise<void> {
    try {
      await this.sfn.send(
        new StartExecutionCommand({ stateMachineArn: this.stateMachineArn, name: input.runId, input: JSON.stringify(input) }),
      );
    } catch (error) {
      // The same run started twice (a retried request): the first start stands.
      if (error instanceof ExecutionAlreadyExists) return;
      throw error;
    }
  }
}
