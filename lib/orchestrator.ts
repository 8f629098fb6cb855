import { Stack, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';

export interface OrchestratorProps {
  readonly table: dynamodb.ITable;
  readonly agentLoop: sfn.IStateMachine;
  readonly bus: events.IEventBus;
}

const runKey = {
  pk: tasks.DynamoAttributeValue.fromString(sfn.JsonPath.format('run#{}', sfn.JsonPath.stringAt('$.runId'))),
  sk: tasks.DynamoAttributeValue.fromString('run'),
};
const now = tasks.DynamoAttributeValue.fromString(sfn.JsonPath.stringAt('$$.State.EnteredTime'));

/**
 * The run's lifecycle (DESIGN invariant 8) around its agent loops, which run as nested
 * executions (`startExecution.sync:2`). Phases are written with the DynamoDB service
 * integration; the outcome is announced on the project's event bus.
 *
 * Input: `{ runId, mode, conversationId, maxIterations }`.
 */
export class Orchestrator extends Construct {
  public readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: OrchestratorProps) {
    super(scope, id);
    const { table } = props;

    const markExecuting = new tasks.DynamoUpdateItem(this, 'MarkExecuting', {
      table,
      key: runKey,
      updateExpression: 'SET #phase = :phase, currentAgent = :agent, updatedAt = :now',
      conditionExpression: 'attribute_exists(pk)',
      expressionAttributeNames: { '#phase': 'phase' },
      expressionAttributeValues: {
        ':phase': tasks.DynamoAttributeValue.fromString('executing'),
        ':agent': tasks.DynamoAttributeValue.fromString('single'),
        ':now': now,
      },
      resultPath: sfn.JsonPath.DISCARD,
    });

    const runSingle = new tasks.StepFunctionsStartExecution(this, 'RunSingleAgent', {
      stateMachine: props.agentLoop,
      integrationPattern: sfn.IntegrationPattern.RUN_JOB,
      // Named after the run, so a retried start cannot run the agent twice (invariant 3).
      name: sfn.JsonPath.format('{}-single', sfn.JsonPath.stringAt('$.runId')),
      input: sfn.TaskInput.fromObject({
        'runId.$': '$.runId',
        agent: 'single',
        'conversationId.$': '$.conversationId',
        'maxIterations.$': '$.maxIterations',
      }),
      associateWithParent: true,
      resultPath: sfn.JsonPath.DISCARD,
    });

    const markComplete = new tasks.DynamoUpdateItem(this, 'MarkComplete', {
      table,
      key: runKey,
      updateExpression: 'SET #status = :status, #phase = :phase, updatedAt = :now REMOVE currentAgent',
      expressionAttributeNames: { '#status': 'status', '#phase': 'phase' },
      expressionAttributeValues: {
        ':status': tasks.DynamoAttributeValue.fromString('succeeded'),
        ':phase': tasks.DynamoAttributeValue.fromString('complete'),
        ':now': now,
      },
      resultPath: sfn.JsonPath.DISCARD,
    });

    // A nested execution's failure arrives as States.TaskFailed with the child's description
    // (its Error and Cause) as a JSON cause; anything else arrives as it is.
    const parseChild = new sfn.Pass(this, 'ParseChildFailure', {
      parameters: { 'parsed.$': 'States.StringToJson($.failure.Cause)' },
      resultPath: '$.child',
    });
    const childError = new sfn.Pass(this, 'ChildError', {
      parameters: { 'code.$': '$.child.parsed.Error', 'message.$': '$.child.parsed.Cause' },
      resultPath: '$.error',
    });
    const ownError = new sfn.Pass(this, 'OwnError', {
      parameters: { 'code.$': '$.failure.Error', 'message.$': '$.failure.Cause' },
      resultPath: '$.error',
    });
    const markFailed = new tasks.DynamoUpdateItem(this, 'MarkFailed', {
      table,
      key: runKey,
      updateExpression: 'SET #status = :status, #phase = :phase, #error = :error, updatedAt = :now REMOVE currentAgent',
      conditionExpression: '#status = :running',
      expressionAttributeNames: { '#status': 'status', '#phase': 'phase', '#error': 'error' },
      expressionAttributeValues: {
        ':status': tasks.DynamoAttributeValue.fromString('failed'),
        ':running': tasks.DynamoAttributeValue.fromString('running'),
        ':phase': tasks.DynamoAttributeValue.fromString('failed'),
        ':error': tasks.DynamoAttributeValue.fromMap({
          code: tasks.DynamoAttributeValue.fromString(sfn.JsonPath.stringAt('$.error.code')),
          message: tasks.DynamoAttributeValue.fromString(sfn.JsonPath.stringAt('$.error.message')),
          agent: tasks.DynamoAttributeValue.fromString('single'),
        }),
        ':now': now,
      },
      resultPath: sfn.JsonPath.DISCARD,
    });
    const explain = new sfn.Choice(this, 'ExplainFailure')
      .when(
        sfn.Condition.and(
          sfn.Condition.stringEquals('$.failure.Error', 'States.TaskFailed'),
          sfn.Condition.stringMatches('$.failure.Cause', '{*'),
        ),
        parseChild.next(
          new sfn.Choice(this, 'ChildDescribed')
            .when(sfn.Condition.isPresent('$.child.parsed.Error'), childError)
            .otherwise(ownError),
        ),
      )
      .otherwise(ownError);
    childError.next(markFailed);
    ownError.next(markFailed);

    const succeeded = this.announce('Succeeded', props, 'Stepwise Run Succeeded', {
      status: 'succeeded',
      phase: 'complete',
    }).next(new sfn.Succeed(this, 'Done'));
    const failed = this.announce('Failed', props, 'Stepwise Run Failed', {
      status: 'failed',
      phase: 'failed',
      'error.$': '$.error',
    }).next(new sfn.Fail(this, 'RunFailed', { errorPath: '$.error.code', causePath: '$.error.message' }));
    markFailed.next(failed);

    runSingle.addCatch(explain, { errors: ['States.ALL'], resultPath: '$.failure' });
    markExecuting.addCatch(explain, { errors: ['States.ALL'], resultPath: '$.failure' });

    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_MONTH });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromChainable(markExecuting.next(runSingle).next(markComplete).next(succeeded)),
      tracingEnabled: true,
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    const loopId = Stack.of(this).getLogicalId(props.agentLoop.node.defaultChild as sfn.CfnStateMachine);
    Validations.of(this.stateMachine.role).acknowledge(
      {
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"${loopId}"}]}]}*]`,
        reason: 'Nested agent-loop executions are named per run at run time; the grant covers executions of that one state machine.',
      },
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'X-Ray tracing and CloudWatch Logs delivery for state machines support no resource-level permissions.',
      },
    );
  }

  /** Reads the run's token usage and puts the completion event on the bus. */
  private announce(
    id: string,
    props: OrchestratorProps,
    detailType: string,
    detail: Record<string, unknown>,
  ): sfn.Chain {
    const usage = new tasks.DynamoGetItem(this, `Load${id}Usage`, {
      table: props.table,
      key: runKey,
      projectionExpression: [
        new tasks.DynamoProjectionExpression().withAttribute('inputTokens'),
        new tasks.DynamoProjectionExpression().withAttribute('outputTokens'),
        new tasks.DynamoProjectionExpression().withAttribute('cacheReadInputTokens'),
        new tasks.DynamoProjectionExpression().withAttribute('cacheCreationInputTokens'),
      ],
      consistentRead: true,
      resultSelector: {
        'inputTokens.$': 'States.StringToJson($.Item.inputTokens.N)',
        'outputTokens.$': 'States.StringToJson($.Item.outputTokens.N)',
        'cacheReadInputTokens.$': 'States.StringToJson($.Item.cacheReadInputTokens.N)',
        'cacheCreationInputTokens.$': 'States.StringToJson($.Item.cacheCreationInputTokens.N)',
      },
      resultPath: '$.usage',
    });
    const put = new tasks.EventBridgePutEvents(this, `Emit${id}`, {
      entries: [
        {
          eventBus: props.bus,
          source: 'stepwise',
          detailType,
          detail: sfn.TaskInput.fromObject({ 'runId.$': '$.runId', ...detail, 'usage.$': '$.usage' }),
        },
      ],
      resultPath: sfn.JsonPath.DISCARD,
    });
    return usage.next(put);
  }
}
