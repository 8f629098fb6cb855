/** The rule and function that mark runs whose orchestrator execution ended outside its states. */
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { logicalIdOf, stepwiseStack, statementsOf } from '../support/template.js';

const { template } = stepwiseStack();

describe('ExecutionEnded', () => {
  const orchestrator = { Ref: logicalIdOf(template, 'OrchestratorStateMachine', 'AWS::StepFunctions::StateMachine') };
  const fn = logicalIdOf(template, 'ExecutionEndedFunction', 'AWS::Lambda::Function');
  const queue = logicalIdOf(template, 'FrontDoorDeadLetters', 'AWS::SQS::Queue');

  it('takes the orchestrator\'s ABORTED, TIMED_OUT and FAILED status events from the default bus to its function', () => {
    const rules = Object.values(template.findResources('AWS::Events::Rule')) as { Properties: Record<string, unknown> }[];
    const rule = rules.find((r) => JSON.stringify(r.Properties.EventPattern).includes('aws.states'));
    // No EventBusName: Step Functions puts its status events on the default bus.
    expect(rule?.Properties.EventBusName).toBeUndefined();
    expect(rule?.Properties.EventPattern).toEqual({
      source: ['aws.states'],
      'detail-type': ['Step Functions Execution Status Change'],
      detail: { stateMachineArn: [orchestrator], status: ['ABORTED', 'TIMED_OUT', 'FAILED'] },
    });
    expect(rule?.Properties.Targets).toEqual([
      expect.objectContaining({
        Arn: { 'Fn::GetAtt': [fn, 'Arn'] },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [queue, 'Arn'] } },
        RetryPolicy: { MaximumRetryAttempts: 4, MaximumEventAgeInSeconds: 21600 },
      }),
    ]);
  });

  it('knows the orchestrator, and records an invocation that still fails after Lambda\'s retries in the dead-letter queue', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ STEPWISE_HANDLER: 'execution-ended', STEPWISE_ORCHESTRATOR_ARN: orchestrator }) },
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: fn },
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
    });
  });

  it('may not start, stop or describe executions: it reads only the status event', () => {
    const actions = statementsOf(template, 'ExecutionEndedFunctionRole').flatMap((s) => [s.Action].flat());
    expect(actions.filter((a) => a.startsWith('states:'))).toEqual([]);
  });
});
