import { ArnFormat, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as authorizers from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import * as integrations from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { runRequestedDetailType } from '../functions/core/intake.js';
import { StepwiseFunction } from './function.js';
import type { Storage } from './storage.js';

/** How callers of the HTTP API authenticate. */
export type ApiAuth = { readonly type: 'iam' } | { readonly type: 'jwt'; readonly issuer: string; readonly audience: string[] };

export interface FrontDoorProps {
  readonly storage: Storage;
  readonly orchestrator: sfn.StateMachine;
  /** The agent loop, whose waits for a reviewer the API resumes. */
  readonly agentLoop: sfn.StateMachine;
  readonly bus: events.IEventBus;
  /**
   * Tools whose calls wait for a reviewer in every run.
   * @default []
   */
  readonly approvalTools?: string[];
  /**
   * The models a run may ask for; others are refused as invalid input.
   * @default any model
   */
  readonly allowedModels?: string[];
  /**
   * Authorization of every route.
   * @default { type: 'iam' } (SigV4-signed requests)
   */
  readonly auth?: ApiAuth;
}

/** The routes the one API function serves: those its OpenAPI document lists (test/infra/api-routes.test.ts), but the local `GET /health`. */
export const apiRoutes: [apigw.HttpMethod, string][] = [
  [apigw.HttpMethod.POST, '/runs'],
  [apigw.HttpMethod.GET, '/runs/{runId}'],
  [apigw.HttpMethod.GET, '/runs/{runId}/messages'],
  [apigw.HttpMethod.GET, '/runs/{runId}/files'],
  [apigw.HttpMethod.GET, '/runs/{runId}/files/{path+}'],
  [apigw.HttpMethod.POST, '/runs/{runId}/cancel'],
  [apigw.HttpMethod.POST, '/runs/{runId}/approvals/{toolUseId}'],
  [apigw.HttpMethod.GET, '/openapi.json'],
];

/**
 * The ways in: an HTTP API (IAM auth by default) and a rule that takes `Stepwise Run Requested`
 * events from the bus to the intake. Both create runs through the same code; events that fail
 * validation, and events the rule could not deliver, land in one dead-letter queue.
 */
export class FrontDoor extends Construct {
  public readonly api: apigw.HttpApi;
  public readonly apiFunction: StepwiseFunction;
  public readonly intakeFunction: StepwiseFunction;
  public readonly deadLetters: sqs.Queue;
  public readonly rule: events.Rule;

  constructor(scope: Construct, id: string, props: FrontDoorProps) {
    super(scope, id);
    const { storage, orchestrator } = props;
    const orchestratorEnv = {
      STEPWISE_TABLE: storage.table.tableName,
      STEPWISE_BUCKET: storage.bucket.bucketName,
      STEPWISE_ORCHESTRATOR_ARN: orchestrator.stateMachineArn,
      ...(props.approvalTools?.length ? { STEPWISE_APPROVAL_TOOLS: props.approvalTools.join(',') } : {}),
      ...(props.allowedModels ? { STEPWISE_ALLOWED_MODELS: props.allowedModels.join(',') } : {}),
    };

    this.deadLetters = new sqs.Queue(this, 'DeadLetters', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.deadLetters).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'This queue is itself the dead-letter queue of the event intake.',
    });

    this.apiFunction = new StepwiseFunction(this, 'Api', { handler: 'api', timeout: Duration.seconds(29), environment: orchestratorEnv });
    this.intakeFunction = new StepwiseFunction(this, 'Intake', {
      handler: 'run-requested',
      timeout: Duration.seconds(30),
      environment: { ...orchestratorEnv, STEPWISE_DEAD_LETTER_URL: this.deadLetters.queueUrl },
    });
    for (const fn of [this.apiFunction.function, this.intakeFunction.function]) {
      storage.grantRunRecords(fn, 'readWrite');
      storage.grantIntakeRecords(fn);
      orchestrator.grantStartExecution(fn);
    }
    this.deadLetters.grantSendMessages(this.intakeFunction.function);
    // The API reads transcripts and lists runs; it writes no conversation item.
    storage.grantConversationRead(this.apiFunction.function);
    storage.grantRunListing(this.apiFunction.function);
    storage.grantWorkspaces(this.apiFunction.function, 'read');
    // Decisions: recorded on the approval item, then the waiting agent loop is resumed. Only
    // this function may answer the loop's task tokens.
    storage.grantApprovals(this.apiFunction.function, 'decide');
    props.agentLoop.grantTaskResponse(this.apiFunction.function);
    // Cancel stops the run's orchestrator execution (its nested executions stop with it).
    this.apiFunction.function.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['states:StopExecution'],
        resources: [
          Stack.of(this).formatArn({
            service: 'states',
            resource: 'execution',
            resourceName: `${orchestrator.stateMachineName}:*`,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        ],
      }),
    );
    const orchestratorId = Stack.of(this).getLogicalId(orchestrator.node.defaultChild as sfn.CfnStateMachine);
    Validations.of(this.apiFunction.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<${orchestratorId}.Name>:*]`,
      reason: 'Executions are named per run at run time; StopExecution reaches executions of the orchestrator only.',
    });

    const accessLogs = new logs.LogGroup(this, 'AccessLogs', { retention: logs.RetentionDays.ONE_MONTH });
    const auth = props.auth ?? { type: 'iam' };
    this.api = new apigw.HttpApi(this, 'HttpApi', {
      description: 'Stepwise: start and follow agent runs.',
      createDefaultStage: false,
      defaultAuthorizer:
        auth.type === 'iam'
          ? new authorizers.HttpIamAuthorizer()
          : new authorizers.HttpJwtAuthorizer('Jwt', auth.issuer, { jwtAudience: auth.audience }),
    });
    new apigw.HttpStage(this, 'Stage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      accessLogSettings: { destination: new apigw.LogGroupLogDestination(accessLogs) },
      throttle: { rateLimit: 50, burstLimit: 100 },
    });
    const integration = new integrations.HttpLambdaIntegration('Api', this.apiFunction.function);
    for (const [method, path] of apiRoutes) this.api.addRoutes({ path, methods: [method], integration });

    this.rule = new events.Rule(this, 'RunRequested', {
      eventBus: props.bus,
      description: 'Stepwise Run Requested events start runs through the intake.',
      eventPattern: { detailType: [runRequestedDetailType] },
      targets: [
        new targets.LambdaFunction(this.intakeFunction.function, {
          deadLetterQueue: this.deadLetters,
          retryAttempts: 4,
          maxEventAge: Duration.hours(2),
        }),
      ],
    });
  }
}
