import { ArnFormat, Duration, Stack, Validations } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { approvalRequestedDetailType, eventSource } from '../functions/core/runs/events.js';
import { stepFailure } from './step-failure.js';
import { addRetries, addStartRetries, exhaustibleErrors } from './step-retries.js';

export interface AgentLoopProps {
  readonly inference: lambda.IFunction;
  readonly tool: lambda.IFunction;
  /** Opens approval requests and stores the task token a gated call waits on. */
  readonly approval: lambda.IFunction;
  /** Where `Stepwise Approval Requested` events go. */
  readonly bus: events.IEventBus;
  /**
   * How long a gated tool call waits for a reviewer; undecided, it is denied with reason `timeout`.
   * @default Duration.hours(24)
   */
  readonly approvalTimeout?: Duration;
  /**
   * Parallel tool calls run at once.
   * @default 8
   */
  readonly toolConcurrency?: number;
  /**
   * Seconds a step may take before Step Functions gives up on it; above the Lambda's timeout.
   * @default 360 for inference, 180 for tools
   */
  readonly inferenceTimeout?: Duration;
  readonly toolTimeout?: Duration;
  /**
   * Iterations one execution runs before the loop continues in a fresh execution of itself
   * (continue-as-new), so a long loop stays far below the 25,000-event history limit of a
   * Standard workflow: an iteration of one tool call writes about 12 events (a Lambda task five:
   * entered, scheduled, started, succeeded, exited; a Choice two), one of N parallel calls about 11 + 7N.
   * @default 60
   */
  readonly iterationsPerExecution?: number;
  /**
   * The state machine's name; fixed so its own ARN can be granted to it without a cycle.
   * @default `${stackName}-agent-loop`
   */
  readonly stateMachineName?: string;
}

/**
 * The agent loop: Inference → Choice on `stopReason` → Map over the tool calls → Inference …
 *
 * Input: `{ runId, agent, label, conversationId, maxIterations, model }` (model empty for the default;
 * `label` is the agent's short name in execution names: `<runId>-<label>-<iteration>` fits in 80 characters). Only ids and counters travel
 * between states (invariant 1, docs/ARCHITECTURE.md); messages and tool outputs stay in DynamoDB/S3.
 * Fails with `MaxIterationsExceeded`, `ModelRefused`, `ContextWindowExceeded` or the step's
 * own error name (`BudgetExceeded`, when a budget is spent), with a plain-text cause.
 */
export class AgentLoop extends Construct {
  public readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: AgentLoopProps) {
    super(scope, id);

    const perExecution = props.iterationsPerExecution ?? 60;
    const stateMachineName = props.stateMachineName ?? `${Stack.of(this).stackName}-agent-loop`;
    // The state is the run's ids and limits plus `step`, the last step's result; `step.next` is the
    // iteration the loop runs next. A fresh run starts at 0, a continuation where its parent stopped.
    const ids = {
      'runId.$': '$.runId',
      'agent.$': '$.agent',
      'label.$': '$.label',
      'conversationId.$': '$.conversationId',
      'maxIterations.$': '$.maxIterations',
      'model.$': '$.model',
    };
    const fresh = new sfn.Pass(this, 'Start', { parameters: { ...ids, segmentEnd: perExecution, step: { next: 0 } } });
    const resumed = new sfn.Pass(this, 'Resume', {
      parameters: { ...ids, 'segmentEnd.$': `States.MathAdd($.iteration, ${perExecution})`, step: { 'next.$': '$.iteration' } },
    });
    const init = new sfn.Choice(this, 'Begin').when(sfn.Condition.isPresent('$.iteration'), resumed).otherwise(fresh);

    // The step checks the loop's bounds itself (it answers `iteration_limit` at maxIterations and
    // `continue` at the segment's end, without reading anything), so no state of the hot path only counts.
    const inference = new tasks.LambdaInvoke(this, 'Inference', {
      lambdaFunction: props.inference,
      payload: sfn.TaskInput.fromObject({
        'runId.$': '$.runId',
        'agent.$': '$.agent',
        'conversationId.$': '$.conversationId',
        'iteration.$': '$.step.next',
        'model.$': '$.model',
        'maxIterations.$': '$.maxIterations',
        'segmentEnd.$': '$.segmentEnd',
      }),
      payloadResponseOnly: true,
      resultPath: '$.step',
      retryOnServiceExceptions: false,
      taskTimeout: sfn.Timeout.duration(props.inferenceTimeout ?? Duration.seconds(360)),
    });
    addRetries(inference);

    // One tool call: the Map item's ids, and whether the call waits for a reviewer first. The
    // iteration and the tool's name ride along for the functions' log keys and metrics only.
    const call = {
      'runId.$': '$.runId',
      'agent.$': '$.agent',
      'conversationId.$': '$.conversationId',
      'seq.$': '$.seq',
      'toolUseId.$': '$.toolUseId',
      'iteration.$': '$.iteration',
      'name.$': '$.name',
    };
    const toolTask = (id: string, payload: Record<string, unknown> = { ...call, 'needsApproval.$': '$.needsApproval' }, inMap = true) => {
      const task = new tasks.LambdaInvoke(this, id, {
        lambdaFunction: props.tool,
        payload: sfn.TaskInput.fromObject(payload),
        payloadResponseOnly: true,
        retryOnServiceExceptions: false,
        taskTimeout: sfn.Timeout.duration(props.toolTimeout ?? Duration.seconds(180)),
        resultPath: sfn.JsonPath.DISCARD,
        // Each item's output is its id only, so the Map's collected output stays small.
        ...(inMap ? { outputPath: '$.toolUseId' } : {}),
      });
      addRetries(task);
      return task;
    };

    // A gated call: open the request (once), announce it, then wait on a task token, which
    // costs nothing while a person decides. The tool step applies the recorded decision; an
    // undecided call whose wait timed out is denied there with reason "timeout".
    const gatedTool = toolTask('GatedTool');
    const requestApproval = new tasks.LambdaInvoke(this, 'RequestApproval', {
      lambdaFunction: props.approval,
      payload: sfn.TaskInput.fromObject({ step: 'request', ...call }),
      payloadResponseOnly: true,
      retryOnServiceExceptions: false,
      taskTimeout: sfn.Timeout.duration(Duration.seconds(60)),
      resultPath: '$.approval',
    });
    addRetries(requestApproval);
    const announce = new tasks.EventBridgePutEvents(this, 'AnnounceApproval', {
      entries: [
        {
          eventBus: props.bus,
          source: eventSource,
          detailType: approvalRequestedDetailType,
          detail: sfn.TaskInput.fromJsonPathAt('$.approval.detail'),
        },
      ],
      resultPath: sfn.JsonPath.DISCARD,
    });
    announce.addRetry({
      errors: ['EventBridge.InternalException', 'EventBridge.ThrottlingException'],
      interval: Duration.seconds(1),
      maxAttempts: 5,
      backoffRate: 2,
      jitterStrategy: sfn.JitterType.FULL,
    });
    const awaitDecision = new tasks.LambdaInvoke(this, 'AwaitDecision', {
      lambdaFunction: props.approval,
      integrationPattern: sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
      payload: sfn.TaskInput.fromObject({ step: 'await', ...call, token: sfn.JsonPath.taskToken }),
      retryOnServiceExceptions: false,
      // No heartbeat: nobody beats while a person thinks; the whole wait is bounded instead.
      taskTimeout: sfn.Timeout.duration(props.approvalTimeout ?? Duration.hours(24)),
      resultPath: sfn.JsonPath.DISCARD,
    });
    // A timed-out wait must not be retried: it is the reviewer's silence, not a fault.
    addRetries(awaitDecision, { timeouts: false });
    // Decided before the wait began, or never: either way the tool step reads the record.
    awaitDecision.addCatch(gatedTool, { errors: ['States.Timeout', 'ApprovalDecided'], resultPath: sfn.JsonPath.DISCARD });
    // A lost announcement does not stop the wait: the run still lists the call in waitingFor.
    announce.addCatch(awaitDecision, { errors: ['States.ALL'], resultPath: '$.announcement' });
    // A call of an agent (DESIGN §12): the inference step made the child run; its loop runs as a
    // nested execution of this state machine (the item waits without polling), then the tool step
    // answers with the child's outcome. A child whose loop failed is marked failed first.
    // `child` is where the call's child is read, `ids` the tool step's payload, `suffix` names the states.
    const childChain = (suffix: string, child: string, ids: Record<string, unknown>, inMap: boolean) => {
      const result = toolTask(`ChildResult${suffix}`, ids, inMap);
      const failed = new tasks.LambdaInvoke(this, `ChildFailed${suffix}`, {
        lambdaFunction: props.tool,
        payload: sfn.TaskInput.fromObject({ action: 'child-failed', ...ids, 'failure.$': '$.childFailure' }),
        payloadResponseOnly: true,
        retryOnServiceExceptions: false,
        taskTimeout: sfn.Timeout.duration(Duration.seconds(60)),
        resultPath: sfn.JsonPath.DISCARD,
      });
      addRetries(failed);
      const run = new sfn.CustomState(this, `RunChild${suffix}`, {
        stateJson: {
          Type: 'Task',
          Resource: `arn:${Stack.of(this).partition}:states:::states:startExecution.sync:2`,
          Parameters: {
            'StateMachineArn.$': '$$.StateMachine.Id',
            'Name.$': `${child}.name`,
            Input: {
              'runId.$': `${child}.runId`,
              'agent.$': `${child}.agent`,
              'label.$': `${child}.label`,
              'conversationId.$': `${child}.conversationId`,
              'maxIterations.$': `${child}.maxIterations`,
              'model.$': `${child}.model`,
              'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id',
            },
          },
          ResultPath: null,
        },
      });
      addStartRetries(run);
      run.addCatch(failed.next(result), { errors: ['States.ALL'], resultPath: '$.childFailure' });
      run.next(result);
      return { start: run, end: result };
    };
    const runChild = childChain('', '$.item.child', { ...call, 'needsApproval.$': '$.needsApproval' }, true).start;

    const gate = new sfn.Choice(this, 'NeedsApproval')
      .when(sfn.Condition.isPresent('$.item.child'), runChild)
      .when(
        sfn.Condition.booleanEquals('$.needsApproval', true),
        requestApproval.next(
          new sfn.Choice(this, 'AlreadyDecided')
            .when(sfn.Condition.booleanEquals('$.approval.decided', true), gatedTool)
            .otherwise(announce.next(awaitDecision).next(gatedTool)),
        ),
      )
      .otherwise(gatedTool);

    // The calls of a turn, at most `toolConcurrency` at once. A turn none of whose calls waits for
    // a reviewer takes `Tools`, whose item is the tool step alone (or `OnlyTool`, below, for a
    // single call); one with a gated call takes `GatedTools`, whose items pass the gate first.
    // Either way the loop goes on at Inference.
    // A call of the last step's turn, wherever it is read from: a Map's item, or the only call.
    const callOfStep = (ref: string) => ({
      'runId.$': '$.runId',
      'agent.$': '$.agent',
      'conversationId.$': '$.conversationId',
      'seq.$': '$.step.seq',
      'toolUseId.$': `${ref}.id`,
      'name.$': `${ref}.name`,
      'iteration.$': '$.step.iteration',
    });
    const toolMap = (id: string, processor: sfn.IChainable, item = false) => {
      const map = new sfn.Map(this, id, {
        itemsPath: '$.step.toolCalls',
        maxConcurrency: props.toolConcurrency ?? 8,
        itemSelector: {
          ...callOfStep('$$.Map.Item.Value'),
          'needsApproval.$': '$$.Map.Item.Value.needsApproval',
          // The whole item, for what only some calls carry (`callsAgent`).
          ...(item ? { 'item.$': '$$.Map.Item.Value' } : {}),
        },
        resultPath: sfn.JsonPath.DISCARD,
      });
      map.itemProcessor(processor).next(inference);
      return map;
    };
    const tools = toolMap('Tools', toolTask('Tool'));
    const gatedTools = toolMap('GatedTools', gate, true);
    // The most common turn, one call that waits for nobody, needs no Map at all.
    const onlyTool = toolTask('OnlyTool', { ...callOfStep('$.step.toolCalls[0]'), needsApproval: false }, false);
    onlyTool.next(inference);
    // So is a turn's one call of an agent: its nested execution, then its tool step.
    const onlyChild = childChain('Only', '$.step.toolCalls[0].child', { ...callOfStep('$.step.toolCalls[0]'), needsApproval: false }, false);
    onlyChild.end.next(inference);

    // Continue-as-new: the loop goes on in a child execution of this same state machine, named
    // after the run, agent and iteration (a retried start cannot start it twice), and this
    // execution ends as the child ends.
    const continueAsNew = new sfn.CustomState(this, 'ContinueAsNew', {
      stateJson: {
        Type: 'Task',
        Resource: `arn:${Stack.of(this).partition}:states:::states:startExecution.sync:2`,
        Parameters: {
          'StateMachineArn.$': '$$.StateMachine.Id',
          'Name.$': "States.Format('{}-{}-{}', $.runId, $.label, $.step.next)",
          Input: {
            'runId.$': '$.runId',
            'agent.$': '$.agent',
            'label.$': '$.label',
            'conversationId.$': '$.conversationId',
            'maxIterations.$': '$.maxIterations',
            'model.$': '$.model',
            'iteration.$': '$.step.next',
            'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id',
          },
        },
        OutputPath: '$.Output',
      },
    });
    const parseContinuation = new sfn.Pass(this, 'ParseContinuation', {
      parameters: { 'parsed.$': 'States.StringToJson($.failure.Cause)' },
      resultPath: '$.continuation',
    });
    const continuationFailed = new sfn.Fail(this, 'ContinuationFailed', {
      errorPath: '$.continuation.parsed.Error',
      causePath: '$.continuation.parsed.Cause',
    });
    addStartRetries(continueAsNew);
    continueAsNew.addCatch(parseContinuation.next(continuationFailed), { errors: ['States.ALL'], resultPath: '$.failure' });

    // The message is formatted in a Pass state: a path is what every interpreter accepts in CausePath.
    const tooMany = new sfn.Pass(this, 'DescribeLimit', {
      parameters: {
        'message.$': "States.Format('The agent reached the limit of {} iterations without finishing.', $.maxIterations)",
      },
      resultPath: '$.limit',
    }).next(new sfn.Fail(this, 'MaxIterationsExceeded', { error: 'MaxIterationsExceeded', causePath: '$.limit.message' }));

    const done = new sfn.Succeed(this, 'Done', { outputPath: '$.step' });
    const refused = new sfn.Fail(this, 'Refused', {
      error: 'ModelRefused',
      cause: 'The model declined to continue this run (stop_reason "refusal"); none of that turn\'s tools were run.',
    });
    const tooLong = new sfn.Fail(this, 'ContextFull', {
      error: 'ContextWindowExceeded',
      cause: 'The conversation no longer fits the model context window.',
    });

    const route = new sfn.Choice(this, 'Route')
      .when(
        sfn.Condition.and(
          sfn.Condition.stringEquals('$.step.stopReason', 'tool_use'),
          sfn.Condition.or(
            sfn.Condition.booleanEquals('$.step.gated', true),
            // Several calls, one of them of an agent: each call's item finds its way in the gate's Map.
            sfn.Condition.and(sfn.Condition.isPresent('$.step.callsAgents'), sfn.Condition.isPresent('$.step.toolCalls[1]')),
          ),
        ),
        gatedTools,
      )
      .when(sfn.Condition.and(sfn.Condition.stringEquals('$.step.stopReason', 'tool_use'), sfn.Condition.isPresent('$.step.toolCalls[1]')), tools)
      .when(sfn.Condition.and(sfn.Condition.stringEquals('$.step.stopReason', 'tool_use'), sfn.Condition.isPresent('$.step.toolCalls[0].child')), onlyChild.start)
      .when(sfn.Condition.and(sfn.Condition.stringEquals('$.step.stopReason', 'tool_use'), sfn.Condition.isPresent('$.step.toolCalls[0]')), onlyTool)
      .when(
        sfn.Condition.or(
          sfn.Condition.stringEquals('$.step.stopReason', 'end_turn'),
          sfn.Condition.stringEquals('$.step.stopReason', 'stop_sequence'),
        ),
        done,
      )
      .when(sfn.Condition.stringEquals('$.step.stopReason', 'refusal'), refused)
      .when(sfn.Condition.stringEquals('$.step.stopReason', 'model_context_window_exceeded'), tooLong)
      .when(sfn.Condition.stringEquals('$.step.stopReason', 'iteration_limit'), tooMany)
      .when(sfn.Condition.stringEquals('$.step.stopReason', 'continue'), continueAsNew)
      // max_tokens, pause_turn and answer_required: the next inference step repairs or resumes
      // the turn, or asks for the structured answer the run still needs; and a tool_use turn
      // with nothing left to run (its only call was final_answer, answered by the step itself).
      .otherwise(inference);

    const describe = stepFailure(this, exhaustibleErrors);
    for (const task of [inference, tools, gatedTools, onlyTool, onlyChild.end]) task.addCatch(describe, { errors: ['States.ALL'], resultPath: '$.failure' });

    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_MONTH });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      stateMachineName,
      definitionBody: sfn.DefinitionBody.fromChainable(init.afterwards().next(inference).next(route)),
      tracingEnabled: true,
      // Every transition is logged; payloads stay out of the logs (they hold ids only anyway).
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    // Continue-as-new starts this state machine itself: its ARN is built from the fixed name,
    // since a reference to the state machine from its own role's policy would be a cycle.
    const stack = Stack.of(this);
    const selfArn = stack.formatArn({ service: 'states', resource: 'stateMachine', resourceName: stateMachineName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    const selfExecutions = stack.formatArn({ service: 'states', resource: 'execution', resourceName: `${stateMachineName}:*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    this.stateMachine.addToRolePolicy(new iam.PolicyStatement({ actions: ['states:StartExecution'], resources: [selfArn] }));
    this.stateMachine.addToRolePolicy(new iam.PolicyStatement({ actions: ['states:DescribeExecution', 'states:StopExecution'], resources: [selfExecutions] }));
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['events:PutTargets', 'events:PutRule', 'events:DescribeRule'],
        resources: [stack.formatArn({ service: 'events', resource: 'rule', resourceName: 'StepFunctionsGetEventsForStepFunctionsExecutionRule' })],
      }),
    );
    const fnId = (fn: lambda.IFunction) => Stack.of(this).getLogicalId(fn.node.defaultChild as lambda.CfnFunction);
    Validations.of(this.stateMachine.role).acknowledge(
      ...[props.inference, props.tool, props.approval].map((fn) => ({
        id: `AwsSolutions-IAM5[Resource::<${fnId(fn)}.Arn>:*]`,
        reason: 'LambdaInvoke grants the function and its versions/aliases; no other function is reachable.',
      })),
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'X-Ray tracing and CloudWatch Logs delivery for state machines support no resource-level permissions.',
      },
      {
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:${stateMachineName}:*]`,
        reason: 'Continuation executions are named per run, agent and iteration at run time; only this state machine\'s executions.',
      },
    );
  }

}
