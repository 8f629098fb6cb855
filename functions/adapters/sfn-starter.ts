/** Starts the orchestrator through the Step Functions API, named after the run. */
import {
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  type SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
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

  async stop(runId: string, reason: string): Promise<void> {
    // Executions are named after the run: arn:…:stateMachine:<name> → arn:…:execution:<name>:<runId>.
    const executionArn = `${this.stateMachineArn.replace(':stateMachine:', ':execution:')}:${runId}`;
    try {
      await this.sfn.send(new StopExecutionCommand({ executionArn, error: 'Cancelled', cause: reason }));
    } catch (error) {
      // Not started yet, or already gone: nothing is left to stop.
      if (!(error instanceof ExecutionDoesNotExist)) throw error;
    }
  }
}
