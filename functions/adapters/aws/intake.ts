/** The intake's ports on AWS: the orchestrator started through Step Functions, refused events sent to SQS. */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import {
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  ExecutionLimitExceeded,
  type SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { named } from '../../core/errors/errors.js';
import type { DeadLetters, OrchestratorInput, RunStarter } from '../../core/intake/types.js';
import { guard } from './errors.js';

/** Step Functions refused or failed a call transiently; the request can be repeated. */
export class OrchestratorUnavailable extends named('OrchestratorUnavailable') {}

/** Starts the orchestrator through the Step Functions API, named after the run. */
export class SfnRunStarter implements RunStarter {
  constructor(
    private readonly sfn: SFNClient,
    private readonly stateMachineArn: string,
  ) {}

  async start(input: OrchestratorInput): Promise<void> {
    try {
      await guard(
        'Starting the run',
        () =>
          this.sfn.send(
            new StartExecutionCommand({ stateMachineArn: this.stateMachineArn, name: input.runId, input: JSON.stringify(input) }),
          ),
        OrchestratorUnavailable,
      );
    } catch (error) {
      // The same run started twice (a retried request): the first start stands.
      if (error instanceof ExecutionAlreadyExists) return;
      // The account's open executions at their quota: the run waits to start, as after a throttle
      // (the request is repeated: an event by Lambda's retries, then from the dead letters), never
      // failed for good (docs/reliability.md, "Nothing lost").
      if (error instanceof ExecutionLimitExceeded) {
        throw new OrchestratorUnavailable(`Starting the run failed: the account's open executions are at their quota (${error.message}).`, { cause: error });
      }
      throw error;
    }
  }

  /**
   * Starts the orchestrator's announcement of a cancelled run as an execution of its own, named
   * `<runId>-cancelled`: Step Functions runs one execution of a name, so it is announced once.
   */
  async announceCancelled(runId: string): Promise<void> {
    const input = { runId, announce: 'cancelled' };
    try {
      await guard(
        'Announcing the cancelled run',
        () => this.sfn.send(new StartExecutionCommand({ stateMachineArn: this.stateMachineArn, name: `${runId}-cancelled`, input: JSON.stringify(input) })),
        OrchestratorUnavailable,
      );
    } catch (error) {
      // Announced already (a cancel sent again).
      if (!(error instanceof ExecutionAlreadyExists)) throw error;
    }
  }

  async stop(runId: string, reason: string): Promise<void> {
    // Executions are named after the run: arn:…:stateMachine:<name> → arn:…:execution:<name>:<runId>.
    const executionArn = `${this.stateMachineArn.replace(':stateMachine:', ':execution:')}:${runId}`;
    try {
      await guard('Stopping the run', () => this.sfn.send(new StopExecutionCommand({ executionArn, error: 'Cancelled', cause: reason })), OrchestratorUnavailable);
    } catch (error) {
      // Not started yet, or already gone: nothing is left to stop.
      if (!(error instanceof ExecutionDoesNotExist)) throw error;
    }
  }
}

/** Dead letters on SQS: each refused event, with the reason, as one message. */
export class SqsDeadLetters implements DeadLetters {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(letter: Parameters<DeadLetters['send']>[0]): Promise<void> {
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(letter) }));
  }
}
