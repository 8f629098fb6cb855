import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { executionEndedPattern } from '../functions/core/runs/execution-ended.js';
import { runEndedPattern } from '../functions/core/traces/run-ended.js';
import { StepwiseFunction } from './function.js';
import type { Storage } from './storage.js';

export interface ExecutionEndedProps {
  readonly storage: Storage;
  /** Stepwise's bus, where the orchestrator announces each run's end (the run's spans are described then). */
  readonly bus: events.IEventBus;
  /** The orchestrator, whose executions are the runs. */
  readonly orchestrator: sfn.IStateMachine;
  /** Where a status event ends that could not be handled (after the rule's and Lambda's retries). */
  readonly deadLetters: sqs.IQueue;
}

/**
 * Nothing stays running for good (invariant 13, docs/ARCHITECTURE.md): a rule on the default bus
 * takes Step Functions' status events of orchestrator executions that ended ABORTED, TIMED_OUT or
 * FAILED to a small function, which marks a run still `running` failed and frees its session.
 */
export class ExecutionEnded extends Construct {
  public readonly function: StepwiseFunction;
  public readonly rule: events.Rule;
  public readonly runEndedRule: events.Rule;

  constructor(scope: Construct, id: string, props: ExecutionEndedProps) {
    super(scope, id);
    const { storage, orchestrator, deadLetters } = props;
    this.function = new StepwiseFunction(this, 'Function', {
      handler: 'execution-ended',
      sendsSpans: true,
      timeout: Duration.seconds(30),
      environment: {
        STEPWISE_TABLE: storage.table.tableName,
        STEPWISE_BUCKET: storage.bucket.bucketName,
        STEPWISE_ORCHESTRATOR_ARN: orchestrator.stateMachineArn,
      },
    });
    // Reads the run (a large goal lies in S3), marks it failed, frees its session lock: nothing else.
    storage.grantRunRecords(this.function.function, 'update');
    storage.grantSessionRelease(this.function.function);
    // The spans of an ended run (docs/traces.md) are read from its agents' answers.
    storage.grantConversationRead(this.function.function);
    this.function.function.configureAsyncInvoke({
      onFailure: new destinations.SqsDestination(deadLetters),
      retryAttempts: 2,
      maxEventAge: Duration.hours(6),
    });
    // Step Functions puts its status events on the account's default bus.
    this.rule = new events.Rule(this, 'Rule', {
      description: 'Orchestrator executions that ended outside their states: mark the run failed, free its session.',
      eventPattern: executionEndedPattern(orchestrator.stateMachineArn),
      targets: [new targets.LambdaFunction(this.function.function, { deadLetterQueue: deadLetters, retryAttempts: 4, maxEventAge: Duration.hours(6) })],
    });
    // Every run's end, announced on Stepwise's bus: the run's own span and its agents' are sent then.
    this.runEndedRule = new events.Rule(this, 'RunEndedRule', {
      description: 'Runs that ended: send the spans of the run and of its agents (docs/traces.md).',
      eventBus: props.bus,
      eventPattern: runEndedPattern,
      targets: [new targets.LambdaFunction(this.function.function, { deadLetterQueue: deadLetters, retryAttempts: 4, maxEventAge: Duration.hours(6) })],
    });
  }
}
