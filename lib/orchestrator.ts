import { Duration, Stack, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { eventSource, runCancelledDetailType, runFailedDetailType, runSucceededDetailType } from '../functions/core/runs/events.js';
import type { BuiltinAgentName } from '../functions/core/agents/types.js';
import { agentPhases } from '../functions/core/agents/phases.js';
import { copyLiveCost, runningAttribute } from '../functions/adapters/dynamo/layout.js';
import type { ErrorName } from '../functions/core/errors/table.js';
import { NestedLoop, RunRecordGet, RunRecordUpdate } from './orchestrator-tasks.js';
import { startExecutionFaults } from './step-retries.js';

export interface OrchestratorProps {
  readonly table: dynamodb.ITable;
  readonly agentLoop: sfn.IStateMachine;
  readonly bus: events.IEventBus;
  /**
   * The longest a run's execution may take; past it Step Functions ends it TIMED_OUT and the run
   * is marked failed with `ExecutionTimedOut` (lib/execution-ended.ts).
   * @default Duration.hours(48)
   */
  readonly timeout?: Duration;
}

const runKey = {
  pk: tasks.DynamoAttributeValue.fromString(sfn.JsonPath.format('run#{}', sfn.JsonPath.stringAt('$.runId'))),
  sk: tasks.DynamoAttributeValue.fromString('run'),
};
const now = tasks.DynamoAttributeValue.fromString(sfn.JsonPath.stringAt('$$.State.EnteredTime'));

/** Transient faults of the services the orchestrator calls directly. */
const serviceFaults = [
  'DynamoDB.ProvisionedThroughputExceededException',
  'DynamoDB.ThrottlingException',
  'DynamoDB.RequestLimitExceeded',
  'DynamoDB.InternalServerErrorException',
  'DynamoDB.AmazonDynamoDBException',
  ...startExecutionFaults,
  'EventBridge.InternalException',
  'EventBridge.ThrottlingException',
  'States.Timeout',
];

/** The same backoff-and-jitter policy as the agent loop, for service integrations. */
function retryServiceFaults<T extends sfn.TaskStateBase>(task: T): T {
  task.addRetry({
    errors: serviceFaults,
    interval: Duration.seconds(1),
    maxAttempts: 5,
    backoffRate: 2,
    maxDelay: Duration.seconds(30),
    jitterStrategy: sfn.JitterType.FULL,
  });
  return task;
}

/**
 * The run's lifecycle (invariant 8, docs/ARCHITECTURE.md) around its agent loops, which run as nested
 * executions (`startExecution.sync:2`). Phases are written with the DynamoDB service
 * integration; the outcome is announced on the project's event bus.
 *
 * single mode: one agent loop. multi mode: the Architect's loop (phase `planning`), a check that
 * it stored a plan, then the Coder's loop (phase `executing`), whose first message carries it.
 *
 * Input: `{ runId, mode, agent, label, conversationId, maxIterations, model }` (`agent` and `label`
 * name the one agent of a single-agent run); `$.currentAgent` names the agent at work.
 * A cancelled run's execution is stopped and announces nothing, so the cancel starts one more,
 * `{ runId, announce: 'cancelled' }`, that only announces it.
 */
export class Orchestrator extends Construct {
  public readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: OrchestratorProps) {
    super(scope, id);
    const { table } = props;

    // Every failure goes through one path: explain it, record it with the agent at work, announce it.
    const explain = new sfn.Choice(this, 'ExplainFailure');
    const catchAll = (task: sfn.TaskStateBase) => retryServiceFaults(task).addCatch(explain, { errors: ['States.ALL'], resultPath: '$.failure' });

    /** Records the phase and the agent at work (`agent`: a name, or a path of the state); a cancelled run stays cancelled. */
    const markAgent = (id: string, phaseName: string, agent: string) =>
      new RunRecordUpdate(this, id, {
        table,
        key: runKey,
        // A status change: the listed cost catches up with the steps' (functions/adapters/dynamo/layout.ts).
        updateExpression: `SET #phase = :phase, currentAgent = :agent, updatedAt = :now, ${copyLiveCost}`,
        conditionExpression: '#status = :running',
        expressionAttributeNames: { '#phase': 'phase', '#status': 'status' },
        expressionAttributeValues: {
          ':phase': tasks.DynamoAttributeValue.fromString(phaseName),
          ':agent': tasks.DynamoAttributeValue.fromString(agent),
          ':running': tasks.DynamoAttributeValue.fromString('running'),
          ':now': now,
        },
        resultPath: sfn.JsonPath.DISCARD,
      });
    /**
     * Runs an agent's loop as a nested execution, named after the run and agent so a retried start
     * cannot run it twice (invariant 3, docs/ARCHITECTURE.md): a fixed agent, or the state's
     * (`$.agent`, its place in the run, and `$.label`, the short name its executions carry).
     */
    const runLoop = (id: string, agent: BuiltinAgentName | 'input', conversationId: string) =>
      new NestedLoop(this, id, {
        stateMachine: props.agentLoop,
        integrationPattern: sfn.IntegrationPattern.RUN_JOB,
        name:
          agent === 'input'
            ? sfn.JsonPath.format('{}-{}', sfn.JsonPath.stringAt('$.runId'), sfn.JsonPath.stringAt('$.label'))
            : sfn.JsonPath.format(`{}-${agent}`, sfn.JsonPath.stringAt('$.runId')),
        input: sfn.TaskInput.fromObject({
          'runId.$': '$.runId',
          ...(agent === 'input' ? { 'agent.$': '$.agent', 'label.$': '$.label' } : { agent, label: agent }),
          'conversationId.$': conversationId,
          'maxIterations.$': '$.maxIterations',
          'model.$': '$.model',
        }),
        associateWithParent: true,
        resultPath: sfn.JsonPath.DISCARD,
      });

    /**
     * Records the phase and agent, then runs that agent's loop. The agent of a one-agent run is
     * the input's; the Architect's and the Coder's are fixed.
     */
    const phase = (agent: BuiltinAgentName, conversationId: string) => {
      const suffix = agent[0]?.toUpperCase() + agent.slice(1);
      const dynamic = agent === 'single';
      const current = dynamic
        ? new sfn.Pass(this, `Current${suffix}`, { inputPath: '$.agent', resultPath: '$.currentAgent' })
        : new sfn.Pass(this, `Current${suffix}`, { result: sfn.Result.fromString(agent), resultPath: '$.currentAgent' });
      const mark = catchAll(markAgent(`Mark${suffix}`, agentPhases[agent], dynamic ? sfn.JsonPath.stringAt('$.agent') : agent));
      const run = catchAll(runLoop(`Run${suffix}`, dynamic ? 'input' : agent, conversationId));
      return { start: current, end: run, chain: current.next(mark).next(run) };
    };

    // Conversation ids follow functions/core/conversation/conversation.ts conversationIdOf: run/<runId>/<agent>.
    const single = phase('single', '$.conversationId');
    const architect = phase('architect', "States.Format('run/{}/architect', $.runId)");
    const coder = phase('coder', "States.Format('run/{}/coder', $.runId)");

    const loadPlan = new RunRecordGet(this, 'LoadPlan', {
      table,
      key: runKey,
      // "plan" is a DynamoDB reserved word.
      projectionExpression: [new tasks.DynamoProjectionExpression().withAttribute('#plan')],
      expressionAttributeNames: { '#plan': 'plan' },
      consistentRead: true,
      resultPath: '$.planRecord',
    });
    catchAll(loadPlan);
    const noPlan = new sfn.Pass(this, 'NoPlanProduced', {
      parameters: {
        code: 'NoPlanProduced' satisfies ErrorName,
        message: 'The Architect finished without submitting a valid plan through finish_plan.',
        'agent.$': '$.currentAgent',
      },
      resultPath: '$.error',
    });
    const planCaptured = new sfn.Choice(this, 'PlanCaptured')
      .when(sfn.Condition.isPresent('$.planRecord.Item.plan'), coder.chain)
      .otherwise(noPlan);
    architect.end.next(loadPlan).next(planCaptured);

    const markComplete = new RunRecordUpdate(this, 'MarkComplete', {
      table,
      key: runKey,
      updateExpression: `SET #status = :status, #phase = :phase, updatedAt = :now, ${copyLiveCost} REMOVE currentAgent, ${runningAttribute}`,
      conditionExpression: '#status = :running',
      expressionAttributeNames: { '#status': 'status', '#phase': 'phase' },
      expressionAttributeValues: {
        ':status': tasks.DynamoAttributeValue.fromString('succeeded'),
        ':phase': tasks.DynamoAttributeValue.fromString('complete'),
        ':running': tasks.DynamoAttributeValue.fromString('running'),
        ':now': now,
      },
      resultPath: sfn.JsonPath.DISCARD,
    });
    catchAll(markComplete);
    single.end.next(markComplete);
    coder.end.next(markComplete);

    // A team's workflow (DESIGN §12): its steps one after another, the agents of a step at once,
    // each agent a nested execution of the agent loop. Its first agent is the one at work until a
    // step marks its own; a failure inside ends the steps and takes the one path below.
    const markStepAgent = retryServiceFaults(markAgent('MarkStepAgent', 'executing', sfn.JsonPath.stringAt('$.agent')));
    const runStepAgent = retryServiceFaults(runLoop('RunStepAgent', 'input', "States.Format('run/{}/{}', $.runId, $.agent)"));
    const limits = { 'runId.$': '$.runId', 'maxIterations.$': '$.maxIterations', 'model.$': '$.model' };
    const stepAgents = new sfn.Map(this, 'StepAgents', {
      itemsPath: '$.agents',
      maxConcurrency: 10,
      // Each agent of a workflow keeps its own iteration limit (the lower of the request's and its definition's).
      itemSelector: { ...limits, 'agent.$': '$$.Map.Item.Value.agent', 'label.$': '$$.Map.Item.Value.label', 'maxIterations.$': '$$.Map.Item.Value.maxIterations' },
      resultPath: sfn.JsonPath.DISCARD,
    });
    stepAgents.itemProcessor(markStepAgent.next(runStepAgent));
    const workflowSteps = new sfn.Map(this, 'WorkflowSteps', {
      itemsPath: '$.steps',
      maxConcurrency: 1,
      itemSelector: { ...limits, 'agents.$': '$$.Map.Item.Value' },
      resultPath: sfn.JsonPath.DISCARD,
    });
    workflowSteps.itemProcessor(stepAgents);
    workflowSteps.addCatch(explain, { errors: ['States.ALL'], resultPath: '$.failure' });
    const workflow = new sfn.Pass(this, 'CurrentWorkflowAgent', { inputPath: '$.agent', resultPath: '$.currentAgent' });
    workflow.next(workflowSteps).next(markComplete);

    // A nested execution's failure arrives as States.TaskFailed with the child's description
    // (its Error and Cause) as a JSON cause; anything else arrives as it is.
    const parseChild = new sfn.Pass(this, 'ParseChildFailure', {
      parameters: { 'parsed.$': 'States.StringToJson($.failure.Cause)' },
      resultPath: '$.child',
    });
    const childError = new sfn.Pass(this, 'ChildError', {
      parameters: { 'code.$': '$.child.parsed.Error', 'message.$': '$.child.parsed.Cause', 'agent.$': '$.currentAgent' },
      resultPath: '$.error',
    });
    const childErrorWithoutCause = new sfn.Pass(this, 'ChildErrorWithoutCause', {
      parameters: { 'code.$': '$.child.parsed.Error', message: 'The agent loop stopped without a cause.', 'agent.$': '$.currentAgent' },
      resultPath: '$.error',
    });
    const ownError = new sfn.Pass(this, 'OwnError', {
      parameters: { 'code.$': '$.failure.Error', 'message.$': '$.failure.Cause', 'agent.$': '$.currentAgent' },
      resultPath: '$.error',
    });
    const markFailed = new RunRecordUpdate(this, 'MarkFailed', {
      table,
      key: runKey,
      updateExpression: `SET #status = :status, #phase = :phase, #error = :error, updatedAt = :now, ${copyLiveCost} REMOVE currentAgent, ${runningAttribute}`,
      conditionExpression: '#status = :running',
      expressionAttributeNames: { '#status': 'status', '#phase': 'phase', '#error': 'error' },
      expressionAttributeValues: {
        ':status': tasks.DynamoAttributeValue.fromString('failed'),
        ':running': tasks.DynamoAttributeValue.fromString('running'),
        ':phase': tasks.DynamoAttributeValue.fromString('failed'),
        ':error': tasks.DynamoAttributeValue.fromMap({
          code: tasks.DynamoAttributeValue.fromString(sfn.JsonPath.stringAt('$.error.code')),
          message: tasks.DynamoAttributeValue.fromString(sfn.JsonPath.stringAt('$.error.message')),
          agent: tasks.DynamoAttributeValue.fromString(sfn.JsonPath.stringAt('$.error.agent')),
        }),
        ':now': now,
      },
      resultPath: sfn.JsonPath.DISCARD,
    });
    explain
      .when(
        sfn.Condition.and(
          sfn.Condition.stringEquals('$.failure.Error', 'States.TaskFailed'),
          sfn.Condition.stringMatches('$.failure.Cause', '{*'),
        ),
        parseChild.next(
          new sfn.Choice(this, 'ChildDescribed')
            .when(
              sfn.Condition.and(sfn.Condition.isPresent('$.child.parsed.Error'), sfn.Condition.isPresent('$.child.parsed.Cause')),
              childError,
            )
            .when(sfn.Condition.isPresent('$.child.parsed.Error'), childErrorWithoutCause)
            .otherwise(ownError),
        ),
      )
      .otherwise(ownError);
    childError.next(markFailed);
    childErrorWithoutCause.next(markFailed);
    ownError.next(markFailed);
    noPlan.next(markFailed);

    const succeeded = this.announce(
      'Succeeded',
      props,
      runSucceededDetailType,
      { status: 'succeeded', phase: 'complete' },
      new sfn.Succeed(this, 'Done'),
    );
    const failed = this.announce(
      'Failed',
      props,
      runFailedDetailType,
      { status: 'failed', phase: 'failed', 'error.$': '$.error' },
      new sfn.Fail(this, 'RunFailed', { errorPath: '$.error.code', causePath: '$.error.message' }),
    );
    retryServiceFaults(markFailed);
    // If even recording the failure fails (after retries), end the execution failed anyway.
    const unrecorded = new sfn.Fail(this, 'FailureNotRecorded', { errorPath: '$.error.code', causePath: '$.error.message' });
    markFailed.addCatch(unrecorded, { errors: ['States.ALL'], resultPath: '$.recording' });
    markFailed.next(failed);
    markComplete.next(succeeded);

    const cancelled = this.announce(
      'Cancelled',
      props,
      runCancelledDetailType,
      { status: 'cancelled', phase: 'cancelled' },
      new sfn.Succeed(this, 'CancelAnnounced'),
    );

    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_MONTH });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      timeout: props.timeout ?? Duration.hours(48),
      definitionBody: sfn.DefinitionBody.fromChainable(
        new sfn.Choice(this, 'Mode')
          .when(sfn.Condition.and(sfn.Condition.isPresent('$.announce'), sfn.Condition.stringEquals('$.announce', 'cancelled')), cancelled)
          .when(sfn.Condition.isPresent('$.steps'), workflow)
          .when(sfn.Condition.stringEquals('$.mode', 'single'), single.chain)
          .otherwise(architect.chain),
      ),
      tracingEnabled: true,
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    const loopId = Stack.of(this).getLogicalId(props.agentLoop.node.defaultChild as sfn.CfnStateMachine);
    Validations.of(this.stateMachine.role).acknowledge(
      {
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"${loopId}"}]}]}:*]`,
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
    end: sfn.Succeed | sfn.Fail,
  ): sfn.Chain {
    const usage = retryServiceFaults(new RunRecordGet(this, `Load${id}Usage`, {
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
    }));
    const put = retryServiceFaults(new tasks.EventBridgePutEvents(this, `Emit${id}`, {
      entries: [
        {
          eventBus: props.bus,
          source: eventSource,
          detailType,
          detail: sfn.TaskInput.fromObject({ 'runId.$': '$.runId', ...detail, 'usage.$': '$.usage' }),
        },
      ],
      resultPath: sfn.JsonPath.DISCARD,
    }));
    // The run record is already final; a lost announcement must not undo it.
    const unannounced = new sfn.Pass(this, `${id}NotAnnounced`).next(end);
    usage.addCatch(unannounced, { errors: ['States.ALL'], resultPath: '$.announcement' });
    put.addCatch(unannounced, { errors: ['States.ALL'], resultPath: '$.announcement' });
    return usage.next(put).next(end);
  }
}
