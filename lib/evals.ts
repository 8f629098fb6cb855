import { Duration, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { StepwiseFunction } from './function.js';
import { NestedLoop } from './orchestrator-tasks.js';
import { addRetries } from './step-retries.js';
import { acknowledgeWildcardResource } from './wildcard-findings.js';
import type { Storage } from './storage.js';

export interface EvalsProps {
  readonly storage: Storage;
  /** The orchestrator: each case, and each judge, is a nested execution of it. */
  readonly orchestrator: sfn.StateMachine;
  /** The intake's environment (the API's): a case's run is created with the same rules as `POST /runs`. */
  readonly intakeEnvironment: Readonly<Record<string, string>>;
  /** The deployment's agent and workflow definitions, bundled into the function (as into the API's). */
  readonly bundledDefinitions?: Record<string, string>;
  /** The longest one run may take: a case's nested execution waits at most this long. */
  readonly runTimeout: Duration;
  /** Whether the deployment limits a caller's daily spend (the intake then reads it). */
  readonly dailyBudget?: boolean;
}

/** Reads the map's items from `evals/<evalId>/cases.json`, granted on those keys only (CDK's reader grants the whole bucket). */
class EvalItemReader extends sfn.S3JsonItemReader {
  constructor(private readonly storage: Storage) {
    super({ bucket: storage.bucket, key: sfn.JsonPath.stringAt('$.itemsKey') });
  }

  override providePolicyStatements(): iam.PolicyStatement[] {
    return [new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [this.storage.bucket.arnForObjects('evals/*/cases.json')] })];
  }
}

/**
 * Deployed evals (docs/evals.md, "Deployed"): a state machine whose Distributed Map reads a
 * suite's cases from S3 and, per case, runs its steps: create the case's run through intake's core
 * (the eval-step function), run the orchestrator on it as a nested execution (a real run), start
 * its judges and run them the same way, judge the case and keep its result. A case whose steps fail
 * is recorded as an error and never fails the map; the report is written last.
 *
 * Input: `{ evalId, owner, itemsKey, concurrency }`.
 */
export class Evals extends Construct {
  public readonly stateMachine: sfn.StateMachine;
  /** The eval steps (`functions/handlers/eval-step.ts`). */
  public readonly step: StepwiseFunction;

  constructor(scope: Construct, id: string, props: EvalsProps) {
    super(scope, id);
    const { storage } = props;
    this.step = new StepwiseFunction(this, 'Step', {
      handler: 'eval-step',
      timeout: Duration.minutes(1),
      environment: { ...props.intakeEnvironment },
      define: props.bundledDefinitions ?? {},
    });
    const fn = this.step.function;
    // It creates runs as POST /runs does, reads what they did, and keeps the eval's documents.
    storage.grantRunRecords(fn, 'readWrite');
    storage.grantIntakeRecords(fn);
    storage.grantAgentDefinitions(fn, 'write');
    storage.grantConversationRead(fn);
    storage.grantWorkspaces(fn, 'readWrite');
    storage.grantEvals(fn, 'finish');
    if (props.dailyBudget) storage.grantSpend(fn, 'read');

    const caseRef = { 'evalId.$': '$.evalId', 'index.$': '$.index', 'owner.$': '$.owner' };
    const step = (stepId: string, name: string, payload: Record<string, unknown>, resultPath: string) => {
      const task = new tasks.LambdaInvoke(this, stepId, {
        lambdaFunction: fn,
        payload: sfn.TaskInput.fromObject({ step: name, ...payload }),
        payloadResponseOnly: true,
        retryOnServiceExceptions: false,
        resultPath,
      });
      addRetries(task);
      return task;
    };
    const nestedRun = (runId: string, idOf: string, input: string) =>
      new NestedLoop(this, runId, {
        stateMachine: props.orchestrator,
        integrationPattern: sfn.IntegrationPattern.RUN_JOB,
        name: sfn.JsonPath.stringAt(idOf),
        input: sfn.TaskInput.fromJsonPathAt(input),
        taskTimeout: sfn.Timeout.duration(props.runTimeout.plus(Duration.minutes(5))),
        resultPath: sfn.JsonPath.DISCARD,
      });

    // A case whose steps failed is an error (never a pass), and the map goes on.
    const caseError = step('CaseError', 'caseError', { ...caseRef, 'failure.$': '$.failure' }, sfn.JsonPath.DISCARD);
    caseError.addCatch(new sfn.Pass(this, 'CaseErrorUnrecorded'), { errors: ['States.ALL'], resultPath: '$.unrecorded' });
    const onError = { errors: ['States.ALL'], resultPath: '$.failure' };

    const startCase = step('StartCase', 'startCase', caseRef, '$.run');
    // The owner's running-runs quota holds for eval cases too: a case waits for a slot, then errors.
    startCase.addRetry({ errors: ['TooManyRuns'], interval: Duration.seconds(20), maxAttempts: 12, backoffRate: 1.5, maxDelay: Duration.minutes(5), jitterStrategy: sfn.JitterType.FULL });
    startCase.addCatch(caseError, onError);
    // The run's own failure is on its record: whatever the nested execution ends with, the case is judged from the record.
    const runCase = nestedRun('RunCase', '$.run.runId', '$.run.orchestrator');
    const startJudges = step('StartJudges', 'startJudges', caseRef, '$.judging');
    startJudges.addCatch(caseError, onError);
    runCase.addCatch(startJudges, { errors: ['States.ALL'], resultPath: sfn.JsonPath.DISCARD });
    const runJudge = nestedRun('RunJudge', '$.runId', '$.orchestrator');
    runJudge.addCatch(new sfn.Pass(this, 'JudgeEnded'), { errors: ['States.ALL'], resultPath: sfn.JsonPath.DISCARD });
    const judges = new sfn.Map(this, 'Judges', { itemsPath: '$.judging.judges', maxConcurrency: 5, resultPath: sfn.JsonPath.DISCARD });
    judges.itemProcessor(runJudge);
    const finishCase = step('FinishCase', 'finishCase', caseRef, sfn.JsonPath.DISCARD);
    finishCase.addCatch(caseError, onError);
    judges.next(finishCase);
    const hasJudges = new sfn.Choice(this, 'HasJudges').when(sfn.Condition.isPresent('$.judging.judges[0]'), judges).otherwise(finishCase);

    const cases = new sfn.DistributedMap(this, 'Cases', {
      itemReader: new EvalItemReader(storage),
      maxConcurrencyPath: '$.concurrency',
      mapExecutionType: sfn.StateMachineType.STANDARD,
      // Each case records its own error; no case's failure fails the eval.
      toleratedFailurePercentage: 100,
      itemSelector: { 'evalId.$': '$.evalId', 'owner.$': '$.owner', 'index.$': '$$.Map.Item.Value.index' },
      resultPath: sfn.JsonPath.DISCARD,
    });
    cases.itemProcessor(startCase.next(runCase).next(startJudges).next(hasJudges));

    const evalRef = { 'evalId.$': '$.evalId', 'owner.$': '$.owner' };
    const failEval = step('FailEval', 'failEval', { ...evalRef, 'failure.$': '$.failure' }, sfn.JsonPath.DISCARD);
    const failed = new sfn.Fail(this, 'EvalFailed', { error: 'EvalFailed', cause: 'The eval could not run its cases or write its report; its record says why.' });
    failEval.addCatch(failed, { errors: ['States.ALL'] });
    failEval.next(failed);
    cases.addCatch(failEval, onError);
    const report = step('WriteReport', 'report', evalRef, sfn.JsonPath.DISCARD);
    report.addCatch(failEval, onError);

    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_MONTH });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      timeout: Duration.days(7),
      definitionBody: sfn.DefinitionBody.fromChainable(cases.next(report).next(new sfn.Succeed(this, 'Reported'))),
      tracingEnabled: true,
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    const orchestratorId = Stack.of(this).getLogicalId(props.orchestrator.node.defaultChild as sfn.CfnStateMachine);
    const selfId = Stack.of(this).getLogicalId(this.stateMachine.node.defaultChild as sfn.CfnStateMachine);
    const fnId = Stack.of(this).getLogicalId(fn.node.defaultChild as lambda.CfnFunction);
    const selfExecutions = `arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"${selfId}"}]}]}`;
    // On the state machine: its role's policy, and the policy CDK adds for the Distributed Map's child executions.
    Validations.of(this.stateMachine).acknowledge(
      {
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"${orchestratorId}"}]}]}:*]`,
        reason: 'Case and judge runs are nested orchestrator executions named per run at run time; the grant covers executions of that one state machine.',
      },
      { id: 'AwsSolutions-IAM5[Resource::*]', reason: 'X-Ray tracing and CloudWatch Logs delivery for state machines support no resource-level permissions.' },
      { id: `AwsSolutions-IAM5[Resource::<${fnId}.Arn>:*]`, reason: 'Invoking any version of the eval-step function, as CDK grants a LambdaInvoke task.' },
      { id: `AwsSolutions-IAM5[Resource::${selfExecutions}:*]`, reason: "The Distributed Map's child executions are named by Step Functions at run time." },
      { id: `AwsSolutions-IAM5[Resource::${selfExecutions}/*:*]`, reason: "Redriving the Distributed Map's child executions, named by Step Functions at run time." },
    );
    acknowledgeWildcardResource(this.stateMachine.role, storage.bucket.arnForObjects('evals/*/cases.json'), 'Each eval\'s items are written under evals/<evalId>/ at run time; the map reads those keys only.');
  }
}
