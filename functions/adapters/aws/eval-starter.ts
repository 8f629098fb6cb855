/** Starts a deployed eval's execution (the evals state machine), named after the eval. */
import { ExecutionAlreadyExists, type SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { EvalExecutionInput, EvalStarter } from '../../core/evals/types.js';
import { OrchestratorUnavailable } from './intake.js';
import { guard } from './errors.js';

export class SfnEvalStarter implements EvalStarter {
  constructor(
    private readonly sfn: SFNClient,
    private readonly stateMachineArn: string,
  ) {}

  async start(input: EvalExecutionInput): Promise<void> {
    try {
      await guard(
        'Starting the eval',
        () => this.sfn.send(new StartExecutionCommand({ stateMachineArn: this.stateMachineArn, name: input.evalId, input: JSON.stringify(input) })),
        OrchestratorUnavailable,
      );
    } catch (error) {
      // Started already (a retried start): the first stands.
      if (!(error instanceof ExecutionAlreadyExists)) throw error;
    }
  }
}
