import { ExecutionAlreadyExists, ExecutionLimitExceeded, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { SfnRunStarter } from '../../functions/adapters/aws/intake.js';
import type { OrchestratorInput } from '../../functions/core/intake/types.js';

const input: OrchestratorInput = { runId: 'run-1', mode: 'single', agent: 'single', label: 'single', conversationId: 'run/run-1/single', maxIterations: 5, model: '' };
const arn = 'arn:aws:states:us-east-1:123456789012:stateMachine:orchestrator';

describe('SfnRunStarter', () => {
  it('starts the orchestrator named after the run, with the run\'s ids and limits', async () => {
    const sfn = mockClient(SFNClient);
    sfn.on(StartExecutionCommand).resolves({ executionArn: `${arn}:run-1`, startDate: new Date() });
    await new SfnRunStarter(new SFNClient({ region: 'us-east-1' }), arn).start(input);
    expect(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input).toEqual({ stateMachineArn: arn, name: 'run-1', input: JSON.stringify(input) });
  });

  it('takes a repeat that found the run started already as started', async () => {
    const sfn = mockClient(SFNClient);
    sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', $metadata: {} }));
    await expect(new SfnRunStarter(new SFNClient({ region: 'us-east-1' }), arn).start(input)).resolves.toBeUndefined();
  });

  it('answers a start held back by a throttle or by the open-executions quota as a transient fault, so the run waits to start and the request is repeated', async () => {
    const sfn = mockClient(SFNClient);
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } });
    sfn.on(StartExecutionCommand).rejectsOnce(throttled).rejects(new ExecutionLimitExceeded({ message: 'Maximum number of running executions', $metadata: {} }));
    const starter = new SfnRunStarter(new SFNClient({ region: 'us-east-1', maxAttempts: 1 }), arn);
    for (const reason of ['ThrottlingException: Rate exceeded', 'open executions are at their quota']) {
      const error = await starter.start(input).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'OrchestratorUnavailable', transient: true });
      expect((error as Error).message).toContain(reason);
    }
  });

  it('announces a cancelled run with an execution named after it, once however often it is asked', async () => {
    const sfn = mockClient(SFNClient);
    sfn.on(StartExecutionCommand).resolvesOnce({ executionArn: `${arn}:run-1-cancelled`, startDate: new Date() }).rejects(new ExecutionAlreadyExists({ message: 'exists', $metadata: {} }));
    const starter = new SfnRunStarter(new SFNClient({ region: 'us-east-1' }), arn);
    await starter.announceCancelled('run-1');
    await starter.announceCancelled('run-1');
    expect(sfn.commandCalls(StartExecutionCommand).map((c) => c.args[0].input)).toEqual([
      { stateMachineArn: arn, name: 'run-1-cancelled', input: JSON.stringify({ runId: 'run-1', announce: 'cancelled' }) },
      { stateMachineArn: arn, name: 'run-1-cancelled', input: JSON.stringify({ runId: 'run-1', announce: 'cancelled' }) },
    ]);
  });
});
