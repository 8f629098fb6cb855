import { ArnFormat, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as authorizers from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import * as integrations from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { externalToolNamesEnvironment } from '../functions/core/tools/external/names.js';
import type { ExternalToolNames } from '../functions/core/tools/external/types.js';
import { StepwiseFunction } from './function.js';
import type { Storage } from './storage.js';
import { type TrustedSource, checkedTrustedSources, enforceTrustedSources, refuseUntrustedOnBehalf, runRequestedPattern } from './trusted-sources.js';

/**
 * How callers of the HTTP API authenticate, and how their roles are known (docs/callers-and-security.md,
 * "Callers and owners"). IAM: the caller's ARN (an assumed role's without its session name, unless
 * `identity` is `session`); reviewers and admins by ARN patterns (`*` and `?` within one `/` part,
 * `**` across parts). JWT: `iss` + `sub`; roles from the `stepwise/approve` and `stepwise/admin`
 * scopes; the tenant from the claim `tenantClaim` names (a token without it is refused).
 */
export type ApiAuth =
  | {
      readonly type: 'iam';
      readonly reviewerArns?: string[];
      readonly adminArns?: string[];
      /**
       * How a caller that assumed a role is named: by the role alone (`role`), or by the whole
       * session ARN (`session`), whose session name whoever may assume the role chooses; use
       * `session` only where the role's trust policy fixes session names.
       * @default 'role'
       */
      readonly identity?: 'role' | 'session';
    }
  | {
      readonly type: 'jwt';
      readonly issuer: string;
      readonly audience: string[];
      readonly tenantClaim?: string;
      /**
       * The issuer's key set, where the stream function reads it (it verifies tokens itself).
       * @default the `jwks_uri` of `<issuer>/.well-known/openid-configuration`, as API Gateway finds it
       */
      readonly jwksUri?: string;
    };

/** Deployment settings of callers: who reviews, how many runs one caller may run, which sources speak for others. */
export interface CallerSettings {
  /**
   * The owner of a run may not decide its own calls; another reviewer must.
   * @default false
   */
  readonly separateReviewer?: boolean;
  /**
   * The most runs one principal may have running at once; more are refused with 429 `TooManyRuns`.
   * @default no limit (the API stage's throttle still applies)
   */
  readonly maxRunningRunsPerCaller?: number;
  /**
   * The most schedules one caller may have; more are refused with 429 `TooManySchedules` (docs/schedules.md).
   * @default 100
   */
  readonly maxSchedulesPerCaller?: number;
  /**
   * Event sources trusted to start runs on behalf of another caller (`onBehalfOf` in the event's
   * detail), each with the principals allowed to put events with it: the bus denies that source to
   * everyone else, and a source without principals fails synth.
   * @default [] (an event's run is owned by its source)
   */
  readonly trustedSources?: TrustedSource[];
}

/** Deployment settings of budgets (docs/costs.md, "Budgets"). */
export interface BudgetProps {
  /**
   * The budget of a run whose request names none, in USD of estimated model cost; a request's
   * `budget` overrides it field by field.
   * @default no USD budget
   */
  readonly defaultRunMaxUsd?: number;
  /**
   * The same in tokens (input, output, cache reads and writes together).
   * @default no token budget
   */
  readonly defaultRunMaxTokens?: number;
  /**
   * What one caller's runs may cost per UTC day, in USD: once spent, new runs are refused (429
   * `BudgetExceeded`) and running ones stop at their next model call.
   * @default no daily limit
   */
  readonly dailyMaxUsdPerCaller?: number;
}

/** The environment that tells the functions the budgets; refuses a setting that is not a positive number. */
export function budgetEnvironment(budgets: BudgetProps = {}): Record<string, string> {
  const settings = [
    ['defaultRunMaxUsd', 'STEPWISE_DEFAULT_RUN_MAX_USD', budgets.defaultRunMaxUsd],
    ['defaultRunMaxTokens', 'STEPWISE_DEFAULT_RUN_MAX_TOKENS', budgets.defaultRunMaxTokens],
    ['dailyMaxUsdPerCaller', 'STEPWISE_DAILY_MAX_USD', budgets.dailyMaxUsdPerCaller],
  ] as const;
  const env: Record<string, string> = {};
  for (const [name, variable, value] of settings) {
    if (value === undefined) continue;
    const whole = name === 'defaultRunMaxTokens';
    if (typeof value !== 'number' || !(value > 0) || (whole && !Number.isInteger(value))) {
      throw new Error(`budgets.${name} must be a positive ${whole ? 'whole ' : ''}number, not ${JSON.stringify(value)}.`);
    }
    env[variable] = String(value);
  }
  return env;
}

/** Lambda's retries of an intake invocation that threw, before it goes to the dead letters (at most 2). */
export const intakeRetryAttempts = 2;

/** The scopes a JWT must carry (one of) to decide approvals. */
export const approvalScopes = ['stepwise/approve', 'stepwise/admin'];

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
   * The configured MCP servers and Lambda tools, by name: approval policies may name them. Only
   * names: the API and intake never call a tool.
   * @default none
   */
  readonly externalTools?: ExternalToolNames;
  /**
   * The models a run may ask for; others are refused as invalid input.
   * @default any model
   */
  readonly allowedModels?: string[];
  /**
   * The deployment's agent and workflow definitions as esbuild `define` (`definitionsDefine`),
   * bundled into the API and intake functions, which check run requests against them.
   * @default {} (the built-ins only)
   */
  readonly bundledDefinitions?: Readonly<Record<string, string>>;
  /**
   * Authorization of every route.
   * @default { type: 'iam' } (SigV4-signed requests)
   */
  readonly auth?: ApiAuth;
  /**
   * Who reviews, quotas, trusted event sources.
   * @default {}
   */
  readonly callers?: CallerSettings;
  /**
   * Default run budgets and the daily limit per caller.
   * @default {} (no budgets)
   */
  readonly budgets?: BudgetProps;
  /**
   * How long a session lock stands even for a run whose record still says running; set it above
   * the orchestrator's timeout, which no run outlives.
   * @default no lease (a lock stands while its run's record says running)
   */
  readonly sessionLease?: Duration;
  /**
   * Sources the stack itself trusts to act for others, with the principals that may put them (the
   * schedules' Scheduler role): enforced as the configured ones, never configurable.
   * @default []
   */
  readonly stackTrustedSources?: TrustedSource[];
}

/** The routes the one API function serves: those its OpenAPI document lists (test/infra/api-routes.test.ts), but the local `GET /health`. */
export const apiRoutes: [apigw.HttpMethod, string][] = [
  [apigw.HttpMethod.POST, '/runs'],
  [apigw.HttpMethod.GET, '/runs'],
  [apigw.HttpMethod.GET, '/runs/{runId}'],
  [apigw.HttpMethod.GET, '/runs/{runId}/messages'],
  [apigw.HttpMethod.GET, '/runs/{runId}/events/page'],
  [apigw.HttpMethod.GET, '/runs/{runId}/files'],
  [apigw.HttpMethod.GET, '/runs/{runId}/files/{path+}'],
  [apigw.HttpMethod.POST, '/runs/{runId}/cancel'],
  [apigw.HttpMethod.POST, '/runs/{runId}/fork'],
  [apigw.HttpMethod.POST, '/runs/{runId}/approvals/{toolUseId}'],
  [apigw.HttpMethod.GET, '/agents'],
  [apigw.HttpMethod.POST, '/schedules'],
  [apigw.HttpMethod.GET, '/schedules'],
  [apigw.HttpMethod.GET, '/schedules/{scheduleId}'],
  [apigw.HttpMethod.DELETE, '/schedules/{scheduleId}'],
  [apigw.HttpMethod.POST, '/schedules/{scheduleId}/pause'],
  [apigw.HttpMethod.POST, '/schedules/{scheduleId}/resume'],
  [apigw.HttpMethod.GET, '/memories'],
  [apigw.HttpMethod.GET, '/memories/{path+}'],
  [apigw.HttpMethod.DELETE, '/memories/{path+}'],
  [apigw.HttpMethod.POST, '/evals'],
  [apigw.HttpMethod.GET, '/evals'],
  [apigw.HttpMethod.GET, '/evals/{evalId}'],
  [apigw.HttpMethod.GET, '/openapi.json'],
  // The A2A agent card; the JSON-RPC interface it names is on the stream URL (docs/a2a.md).
  [apigw.HttpMethod.GET, '/.well-known/agent-card.json'],
  // MCP (docs/mcp.md): POST carries its messages; GET and DELETE answer 405 (no sessions), which MCP clients expect rather than a 404.
  [apigw.HttpMethod.POST, '/mcp'],
  [apigw.HttpMethod.GET, '/mcp'],
  [apigw.HttpMethod.DELETE, '/mcp'],
];

/**
 * The ways in: an HTTP API (IAM auth by default) and a rule that takes `Stepwise Run Requested`
 * events from the bus to the intake. Both create runs through the same code. Every event that
 * cannot start a run ends in one dead-letter queue: refused by the intake (with the reason),
 * undeliverable by the rule, or still failing when Lambda's retries of the intake run out.
 */
export class FrontDoor extends Construct {
  public readonly api: apigw.HttpApi;
  public readonly apiFunction: StepwiseFunction;
  public readonly intakeFunction: StepwiseFunction;
  public readonly deadLetters: sqs.Queue;
  public readonly rule: events.Rule;
  /** IAM auth: the policy callers need to use the API (all routes but deciding approvals). */
  public readonly callerPolicy?: iam.ManagedPolicy;
  /** IAM auth: the policy reviewers need besides `callerPolicy` (deciding approvals). */
  public readonly reviewerPolicy?: iam.ManagedPolicy;
  /** The API function's settings (callers, intake, storage), which the stream function shares. */
  public readonly apiEnvironment: Readonly<Record<string, string>>;

  constructor(scope: Construct, id: string, props: FrontDoorProps) {
    super(scope, id);
    const { storage, orchestrator } = props;
    const auth = props.auth ?? { type: 'iam' };
    const callers = props.callers ?? {};
    const trusted = [...checkedTrustedSources(callers.trustedSources), ...(props.stackTrustedSources ?? [])];
    if (auth.type === 'iam' && auth.identity !== undefined && !['role', 'session'].includes(auth.identity)) {
      throw new Error(`auth.identity must be "role" or "session", not ${JSON.stringify(auth.identity)}.`);
    }
    const orchestratorEnv = {
      STEPWISE_AUTH: auth.type,
      ...(auth.type === 'jwt' && auth.tenantClaim ? { STEPWISE_TENANT_CLAIM: auth.tenantClaim } : {}),
      ...(auth.type === 'iam' && auth.identity === 'session' ? { STEPWISE_IAM_IDENTITY: 'session' } : {}),
      ...(auth.type === 'iam' && auth.reviewerArns?.length ? { STEPWISE_REVIEWER_ARNS: auth.reviewerArns.join(',') } : {}),
      ...(auth.type === 'iam' && auth.adminArns?.length ? { STEPWISE_ADMIN_ARNS: auth.adminArns.join(',') } : {}),
      ...(callers.separateReviewer ? { STEPWISE_SEPARATE_REVIEWER: 'true' } : {}),
      ...(callers.maxRunningRunsPerCaller ? { STEPWISE_MAX_RUNNING_RUNS: String(callers.maxRunningRunsPerCaller) } : {}),
      ...(callers.maxSchedulesPerCaller ? { STEPWISE_MAX_SCHEDULES_PER_CALLER: String(callers.maxSchedulesPerCaller) } : {}),
      ...(trusted.length ? { STEPWISE_TRUSTED_SOURCES: trusted.map((t) => t.source).join(',') } : {}),
      STEPWISE_TABLE: storage.table.tableName,
      STEPWISE_BUCKET: storage.bucket.bucketName,
      STEPWISE_ORCHESTRATOR_ARN: orchestrator.stateMachineArn,
      ...(props.sessionLease ? { STEPWISE_SESSION_LEASE_SECONDS: String(props.sessionLease.toSeconds()) } : {}),
      ...(props.approvalTools?.length ? { STEPWISE_APPROVAL_TOOLS: props.approvalTools.join(',') } : {}),
      ...externalToolNamesEnvironment(props.externalTools),
      ...(props.allowedModels ? { STEPWISE_ALLOWED_MODELS: props.allowedModels.join(',') } : {}),
      ...budgetEnvironment(props.budgets),
    };

    this.apiEnvironment = orchestratorEnv;

    this.deadLetters = new sqs.Queue(this, 'DeadLetters', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.deadLetters).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'This queue is itself the dead-letter queue of the event intake.',
    });

    const define = props.bundledDefinitions ?? {};
    this.apiFunction = new StepwiseFunction(this, 'Api', { handler: 'api', timeout: Duration.seconds(29), environment: orchestratorEnv, define });
    this.intakeFunction = new StepwiseFunction(this, 'Intake', {
      handler: 'run-requested',
      timeout: Duration.seconds(30),
      environment: { ...orchestratorEnv, STEPWISE_DEAD_LETTER_URL: this.deadLetters.queueUrl },
      define,
    });
    for (const fn of [this.apiFunction.function, this.intakeFunction.function]) {
      storage.grantRunRecords(fn, 'readWrite');
      storage.grantIntakeRecords(fn);
      // Each run's agents are stored once per version, so its steps follow the definitions it started with.
      storage.grantAgentDefinitions(fn, 'write');
      orchestrator.grantStartExecution(fn);
      // Refusing runs once a caller's day is spent needs that day's sum.
      if (props.budgets?.dailyMaxUsdPerCaller !== undefined) storage.grantSpend(fn, 'read');
    }
    this.deadLetters.grantSendMessages(this.intakeFunction.function);
    // The rule invokes the intake asynchronously: an invocation that throws (a transient fault, a
    // busy session, a dead letter that could not be sent) is retried twice by Lambda, about one
    // and three minutes later, then recorded in the dead-letter queue with its error, not dropped.
    this.intakeFunction.function.configureAsyncInvoke({
      onFailure: new destinations.SqsDestination(this.deadLetters),
      retryAttempts: intakeRetryAttempts,
      maxEventAge: Duration.hours(2),
    });
    // The API reads transcripts and lists runs. The one conversation item it writes is a fork's
    // copy (a new conversation), and the one workspace write a fork's CopyObject: made while the
    // request waits, so the fork's first step finds them complete.
    storage.grantConversationRead(this.apiFunction.function);
    // The run's events as pages (GET /runs/{runId}/events/page) read the answers being written too.
    storage.grantLiveText(this.apiFunction.function, 'read');
    storage.grantConversationCopy(this.apiFunction.function);
    storage.grantRunListing(this.apiFunction.function);
    storage.grantWorkspaces(this.apiFunction.function, 'readWrite');
    // The caller's memory files: listed, read and deleted, never written (docs/memory.md).
    storage.grantMemories(this.apiFunction.function, 'readDelete');
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
    for (const [method, path] of apiRoutes) {
      // Deciding needs a reviewer's scope, checked by API Gateway before the function runs (and again by it).
      const scopes = auth.type === 'jwt' && isApprovalRoute(path) ? { authorizationScopes: approvalScopes } : {};
      this.api.addRoutes({ path, methods: [method], integration, ...scopes });
    }
    if (auth.type === 'iam') {
      // With IAM auth, what a principal may call is its IAM policy: one for every caller, one more for reviewers.
      const apiId = Stack.of(this).getLogicalId(this.api.node.defaultChild as apigw.CfnApi);
      const pathOf = (path: string) => path.replace(/\{[^}]+\}/g, '*');
      const invoke = (routes: [apigw.HttpMethod, string][]) =>
        new iam.PolicyStatement({
          actions: ['execute-api:Invoke'],
          resources: routes.map(([method, path]) => this.api.arnForExecuteApi(method, pathOf(path), '$default')),
        });
      const acknowledge = (policy: iam.ManagedPolicy, routes: [apigw.HttpMethod, string][]) => {
        for (const [method, path] of routes.filter(([, p]) => p.includes('{'))) {
          Validations.of(policy).acknowledge({
            id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${apiId}>/$default/${method}${pathOf(path)}]`,
            reason: 'Run ids and tool call ids are path parameters chosen at run time; the grant names one route of this API.',
          });
        }
      };
      const callerRoutes = apiRoutes.filter(([, path]) => !isApprovalRoute(path));
      const reviewerRoutes = apiRoutes.filter(([, path]) => isApprovalRoute(path));
      this.callerPolicy = new iam.ManagedPolicy(this, 'CallerPolicy', {
        description: 'Stepwise API: start, list, read, watch and cancel runs (attach to callers).',
        statements: [invoke(callerRoutes)],
      });
      this.reviewerPolicy = new iam.ManagedPolicy(this, 'ReviewerPolicy', {
        description: 'Stepwise API: decide approvals (attach to reviewers, with the reviewer ARN patterns).',
        statements: [invoke(reviewerRoutes)],
      });
      acknowledge(this.callerPolicy, callerRoutes);
      acknowledge(this.reviewerPolicy, reviewerRoutes);
    }

    // Only the principals named for a trusted source may put it (the bus's policy); the rule takes
    // onBehalfOf from trusted sources only, and sends the others to the dead letters with the reason.
    enforceTrustedSources(this, props.bus, trusted);
    this.rule = new events.Rule(this, 'RunRequested', {
      eventBus: props.bus,
      description: 'Stepwise Run Requested events start runs through the intake.',
      eventPattern: runRequestedPattern(trusted),
      targets: [
        new targets.LambdaFunction(this.intakeFunction.function, {
          deadLetterQueue: this.deadLetters,
          retryAttempts: 4,
          maxEventAge: Duration.hours(2),
        }),
      ],
    });
    refuseUntrustedOnBehalf(this, props.bus, trusted, this.deadLetters);
  }
}

/** Whether a route decides approvals (the reviewers' route). */
function isApprovalRoute(path: string): boolean {
  return path.includes('/approvals/');
}
