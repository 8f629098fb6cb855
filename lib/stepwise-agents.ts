import { Duration, Stack, Validations } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { approvableTool, approvableToolsText } from '../functions/core/approvals/policy.js';
import { placeOf } from '../functions/core/definitions/definition.js';
import { externalToolNames } from '../functions/core/tools/external/names.js';
import { checkedAgentCatalog, definitionsDefine } from './agent-definitions.js';
import { AgentLoop } from './agent-loop.js';
import { Evals } from './evals.js';
import { ExecutionEnded } from './execution-ended.js';
import { ExternalTools } from './external-tools.js';
import { bedrockModel, grantBedrockInvoke } from './bedrock-access.js';
import { projectEventBus } from './event-bus.js';
import { FrontDoor, budgetEnvironment } from './front-door.js';
import { StepwiseFunction } from './function.js';
import { Observability } from './observability.js';
import type { StepwiseAgentsProps, StepwiseFunctions, StepwiseStateMachines } from './stepwise-agents-props.js';
import { Orchestrator } from './orchestrator.js';
import { Schedules } from './schedules.js';
import { Storage } from './storage.js';
import { LiveStream } from './stream.js';

export type { StepwiseAgentsProps, StepwiseFunctions, StepwiseStateMachines } from './stepwise-agents-props.js';

/**
 * Stepwise as one construct: storage, the step functions, the agent loop and the orchestrator,
 * the HTTP API and event intake, and the dashboard and alarms. Put one in any stack:
 * `new StepwiseAgents(this, 'Agents', { model: 'claude-sonnet-4-5' })`.
 *
 * Some names derive from the stack's name (the event bus, the agent-loop state machine, the
 * default secret, the dashboard), so a stack holds one StepwiseAgents.
 */
export class StepwiseAgents extends Construct {
  /** Conversation memory, run records and approvals (one table, `pk`/`sk`): created, or `existingTableObj`. */
  public readonly table: dynamodb.ITable;
  /** Run workspaces (`workspaces/<runId>/`) and large message bodies: created, or `existingBucketObj`. */
  public readonly bucket: s3.IBucket;
  /** The HTTP API (output its `apiEndpoint`). */
  public readonly api: apigw.HttpApi;
  /** The function URL that streams run events (output its `url`); the HTTP API cannot stream. */
  public readonly streamUrl: lambda.FunctionUrl;
  /** The project's event bus: run requests in, run completions and approval requests out; created, or `existingEventBusObj`. */
  public readonly bus: events.IEventBus;
  /** The schedule group and the role EventBridge Scheduler fires schedules with. */
  public readonly schedules: Schedules;
  public readonly stateMachines: StepwiseStateMachines;
  public readonly functions: StepwiseFunctions;
  /** The CloudWatch dashboard of runs, iterations, tokens, tool errors, Lambdas and dead letters. */
  public readonly dashboard: cloudwatch.Dashboard;
  /** Every alarm. */
  public readonly alarms: cloudwatch.Alarm[];

  public readonly storage: Storage;
  public readonly inference: StepwiseFunction;
  /** The tool function: every tool call runs here, whatever the tool. */
  public readonly tool: StepwiseFunction;
  /** Opens approval requests of gated tool calls and stores the token each waits on. */
  public readonly approval: StepwiseFunction;
  public readonly agentLoop: AgentLoop;
  public readonly orchestrator: Orchestrator;
  public readonly frontDoor: FrontDoor;
  /** Deployed evals (`POST /evals`): a Distributed Map over a suite's cases, each a real run of the orchestrator. */
  public readonly evals: Evals;
  /** `GET /runs/{runId}/events` and `POST /agui`, streamed from a function URL. */
  public readonly liveStream: LiveStream;
  /** Marks runs whose execution ended outside its states, and frees their sessions. */
  public readonly executionEnded: ExecutionEnded;
  public readonly observability: Observability;
  /** The Anthropic API key's secret; none when the model is served by Bedrock. */
  public readonly anthropicKey?: secretsmanager.ISecret;
  /** The models runs may ask for, the deployment's own first. */
  public readonly allowedModels: string[];
  /** The role tool calls assume, narrowed per run. */
  public readonly workspaceRole: iam.Role;
  /** The MCP servers' and Lambda tools' wiring, when any are configured. */
  public readonly externalTools?: ExternalTools;
  /** The places of the agents runs may have (the built-ins' `single`, `architect`, `coder`, then your agents' names), as metrics name them. */
  public readonly agentPlaces: string[];

  constructor(scope: Construct, id: string, props: StepwiseAgentsProps = {}) {
    super(scope, id);
    const stackName = Stack.of(this).stackName;
    // A tool the deployment does not have would gate nothing: refused here, not deployed ungated.
    const externalNames = externalToolNames({ mcpServers: props.mcpServers ?? [], lambdaTools: props.tools ?? [] });
    const approvable = approvableTool(externalNames);
    const unknown = (props.approvalTools ?? []).filter((name) => !approvable(name));
    if (unknown.length) throw new Error(`approvalTools names unknown tools: ${unknown.join(', ')} (known: ${approvableToolsText(externalNames)}).`);
    const provider = props.provider ?? 'anthropic';
    const model = props.model ?? 'claude-sonnet-4-5';
    this.allowedModels = [...new Set([model, ...(props.allowedModels ?? [])])];
    // The rules the functions apply when they load, applied here, so a bad definition fails synth, not the first run.
    const definitions = { ...(props.agents ? { agents: props.agents } : {}), ...(props.workflows ? { workflows: props.workflows } : {}) };
    const catalog = checkedAgentCatalog(definitions, { external: externalNames, allowedModels: this.allowedModels });
    this.agentPlaces = catalog.agentNames().map(placeOf);
    // The functions that start runs read the definitions from their code: too long for an environment.
    const bundledDefinitions = definitionsDefine(definitions);

    this.storage = new Storage(this, 'Storage', props);
    const { table, bucket } = this.storage;
    this.bus = projectEventBus(this, 'Bus', props);
    const shared = { STEPWISE_TABLE: table.tableName, STEPWISE_BUCKET: bucket.bucketName };

    // Fail at synth, naming the id, rather than on the first run.
    if (provider === 'bedrock') for (const id of this.allowedModels) bedrockModel(id);

    // The model key lives in Secrets Manager and is read at run time, never put in the template.
    // Bedrock needs none: its calls are signed with the inference function's role.
    if (provider === 'anthropic') {
      this.anthropicKey = props.anthropicSecretName
        ? secretsmanager.Secret.fromSecretNameV2(this, 'AnthropicApiKey', props.anthropicSecretName)
        : new secretsmanager.Secret(this, 'AnthropicApiKey', {
            secretName: `${stackName}/anthropic-api-key`,
            description: 'The Anthropic API key Stepwise calls the model with. Set its value after deploying.',
          });
      if (this.anthropicKey instanceof secretsmanager.Secret) {
        Validations.of(this.anthropicKey).acknowledge({
          id: 'AwsSolutions-SMG4',
          reason: 'A third-party API key: it is rotated in the Anthropic console, not by a rotation Lambda.',
        });
      }
    }

    // Fail at synth on a budget that is not a positive number.
    const budgetEnv = budgetEnvironment(props.budgets);

    // Timeouts nest (invariant 3, docs/ARCHITECTURE.md): one model call 240 s, with no SDK retry, < Lambda
    // 300 s < state 360 s; the state machine's Retry is the only retry loop.
    this.inference = new StepwiseFunction(this, 'Inference', {
      sendsSpans: true,
      // One entry per provider, so the bundle carries only the SDK this deployment calls.
      handler: provider === 'bedrock' ? 'inference-bedrock' : 'inference',
      timeout: Duration.minutes(5),
      environment: {
        ...shared,
        STEPWISE_PROVIDER: provider,
        STEPWISE_MODEL: model,
        STEPWISE_MAX_TOKENS: String(props.maxTokens ?? 8192),
        STEPWISE_CONTEXT_WINDOW_TOKENS: String(props.contextWindowTokens ?? 200_000),
        STEPWISE_MODEL_TIMEOUT_MS: String(Duration.minutes(4).toMilliseconds()),
        STEPWISE_MODEL_MAX_RETRIES: '0',
        ...(this.anthropicKey ? { ANTHROPIC_API_KEY_SECRET_ARN: this.anthropicKey.secretArn } : {}),
        // A run's own budget is on its record; the daily limit the function is told.
        ...(budgetEnv.STEPWISE_DAILY_MAX_USD ? { STEPWISE_DAILY_MAX_USD: budgetEnv.STEPWISE_DAILY_MAX_USD } : {}),
        ...(props.reviewEgressAfterUntrusted === false ? { STEPWISE_REVIEW_EGRESS_AFTER_UNTRUSTED: 'false' } : {}),
      },
    });
    this.anthropicKey?.grantRead(this.inference.function);
    if (provider === 'bedrock') grantBedrockInvoke(this.inference.role, this.allowedModels);
    this.storage.grantConversationMemory(this.inference.function);
    // An agent that calls agents makes each child run at the step that calls it (functions/core/children/):
    // only then may the step create run records.
    const callsAgents = (props.agents ?? []).some((agent) => agent.tools?.some((tool) => tool.startsWith('agent:')));
    this.storage.grantRunRecords(this.inference.function, callsAgents ? 'readWrite' : 'update');
    this.storage.grantToolCatalog(this.inference.function, 'write');
    if (props.budgets?.dailyMaxUsdPerCaller !== undefined) this.storage.grantSpend(this.inference.function, 'record');
    this.storage.grantLiveText(this.inference.function, 'write');
    // The version of its agent's definition a run recorded (the built-ins' own versions need no read).
    this.storage.grantAgentDefinitions(this.inference.function, 'read');
    // The gate on egress after untrusted content opens a call's approval request at the step that gates it.
    this.storage.grantApprovals(this.inference.function, 'request');

    // Tools reach workspaces only through this role, assumed per call with a session policy
    // that narrows it to the run's own prefix (invariant 7, docs/ARCHITECTURE.md).
    this.tool = new StepwiseFunction(this, 'Tool', { handler: 'tool', timeout: Duration.minutes(2), environment: shared, sendsSpans: true });
    this.workspaceRole = new iam.Role(this, 'WorkspaceRole', {
      assumedBy: new iam.ArnPrincipal(this.tool.role.roleArn),
      description: 'Assumed by the tool function per run or memory scope, narrowed by a session policy to workspaces/<runId>/ or memories/<scope>/<key>/.',
      maxSessionDuration: Duration.hours(1),
    });
    this.storage.grantWorkspaces(this.workspaceRole, 'readWrite');
    // Memory scopes (docs/memory.md), through the same role and a session policy per scope.
    this.storage.grantMemories(this.workspaceRole, 'readWriteDelete');
    this.workspaceRole.grantAssumeRole(this.tool.role);
    this.tool.function.addEnvironment('STEPWISE_WORKSPACE_ROLE_ARN', this.workspaceRole.roleArn);
    this.storage.grantConversationMemory(this.tool.function);
    this.storage.grantRunRecords(this.tool.function, 'updateOnly');
    this.storage.grantApprovals(this.tool.function, 'settle');
    this.storage.grantToolCatalog(this.tool.function, 'read');
    this.storage.grantAgentDefinitions(this.tool.function, 'read');

    this.approval = new StepwiseFunction(this, 'Approval', { handler: 'approval', timeout: Duration.seconds(30), environment: shared });
    this.storage.grantConversationRead(this.approval.function);
    this.storage.grantApprovals(this.approval.function, 'request');

    if (props.mcpServers?.length || props.tools?.length) {
      this.externalTools = new ExternalTools(this, 'ExternalTools', {
        inference: this.inference.function,
        tool: this.tool.function,
        ...(props.mcpServers ? { mcpServers: props.mcpServers } : {}),
        ...(props.tools ? { tools: props.tools } : {}),
      });
    }

    this.agentLoop = new AgentLoop(this, 'AgentLoop', {
      inference: this.inference.function,
      tool: this.tool.function,
      approval: this.approval.function,
      bus: this.bus,
      inferenceTimeout: Duration.seconds(360),
      toolTimeout: Duration.seconds(150),
      ...(props.iterationsPerExecution ? { iterationsPerExecution: props.iterationsPerExecution } : {}),
      ...(props.approvalTimeout ? { approvalTimeout: props.approvalTimeout } : {}),
    });

    const runTimeout = props.runTimeout ?? Duration.hours(24).plus(props.approvalTimeout ?? Duration.hours(24));
    this.orchestrator = new Orchestrator(this, 'Orchestrator', {
      table,
      agentLoop: this.agentLoop.stateMachine,
      bus: this.bus,
      timeout: runTimeout,
    });
    // Its states read and write run records directly.
    this.storage.grantTableKey(this.orchestrator.stateMachine, 'write');

    // Schedules fire on EventBridge Scheduler, through a source only its role may put (docs/schedules.md).
    this.schedules = new Schedules(this, 'Schedules', { bus: this.bus });
    this.frontDoor = new FrontDoor(this, 'FrontDoor', {
      stackTrustedSources: [this.schedules.trustedSource],
      storage: this.storage,
      orchestrator: this.orchestrator.stateMachine,
      agentLoop: this.agentLoop.stateMachine,
      bus: this.bus,
      approvalTools: props.approvalTools ?? [],
      externalTools: externalNames,
      allowedModels: this.allowedModels,
      bundledDefinitions,
      // No run outlives the orchestrator's timeout: a lock older than that has lost its holder.
      sessionLease: runTimeout.plus(Duration.minutes(15)),
      ...(props.auth ? { auth: props.auth } : {}),
      ...(props.callers ? { callers: props.callers } : {}),
      ...(props.budgets ? { budgets: props.budgets } : {}),
    });

    this.schedules.grantManage(this.frontDoor.apiFunction.function);
    this.storage.grantSchedules(this.frontDoor.apiFunction.function, 'manage');
    this.storage.grantSchedules(this.frontDoor.intakeFunction.function, 'fire');
    this.evals = new Evals(this, 'Evals', {
      storage: this.storage,
      orchestrator: this.orchestrator.stateMachine,
      intakeEnvironment: this.frontDoor.apiEnvironment,
      bundledDefinitions,
      runTimeout,
      dailyBudget: props.budgets?.dailyMaxUsdPerCaller !== undefined,
    });
    // POST /evals records the eval, writes its suite and starts its execution; GET /evals reads them.
    this.frontDoor.apiFunction.function.addEnvironment('STEPWISE_EVALS_ARN', this.evals.stateMachine.stateMachineArn);
    this.evals.stateMachine.grantStartExecution(this.frontDoor.apiFunction.function);
    this.storage.grantEvals(this.frontDoor.apiFunction.function, 'api');

    this.liveStream = new LiveStream(this, 'LiveStream', {
      storage: this.storage,
      orchestrator: this.orchestrator.stateMachine,
      apiEnvironment: this.frontDoor.apiEnvironment,
      apiFunction: this.frontDoor.apiFunction.function,
      bundledDefinitions,
      ...(props.auth ? { auth: props.auth } : {}),
      ...(this.frontDoor.callerPolicy ? { callerPolicy: this.frontDoor.callerPolicy } : {}),
      ...(props.maxConcurrentStreams !== undefined ? { maxConcurrentStreams: props.maxConcurrentStreams } : {}),
      ...(props.maxStreamsPerCaller !== undefined ? { maxStreamsPerCaller: props.maxStreamsPerCaller } : {}),
    });

    this.executionEnded = new ExecutionEnded(this, 'ExecutionEnded', {
      storage: this.storage,
      bus: this.bus,
      orchestrator: this.orchestrator.stateMachine,
      deadLetters: this.frontDoor.deadLetters,
    });

    this.table = table;
    this.bucket = bucket;
    this.api = this.frontDoor.api;
    this.streamUrl = this.liveStream.url;
    this.stateMachines = { orchestrator: this.orchestrator.stateMachine, agentLoop: this.agentLoop.stateMachine };
    this.functions = {
      inference: this.inference.function,
      tool: this.tool.function,
      approval: this.approval.function,
      api: this.frontDoor.apiFunction.function,
      intake: this.frontDoor.intakeFunction.function,
      executionEnded: this.executionEnded.function.function,
      stream: this.liveStream.function.function,
    };

    this.observability = new Observability(this, 'Observability', {
      orchestrator: this.orchestrator.stateMachine,
      table,
      agentLoop: this.agentLoop.stateMachine,
      functions: {
        Inference: this.functions.inference,
        Tool: this.functions.tool,
        Approval: this.functions.approval,
        Api: this.functions.api,
        Intake: this.functions.intake,
        ExecutionEnded: this.functions.executionEnded,
        Stream: this.functions.stream,
        EvalStep: this.evals.step.function,
      },
      api: { httpApi: this.api, function: this.functions.api },
      stream: { function: this.functions.stream, timeout: this.liveStream.timeout, maxStream: this.liveStream.maxStream },
      deadLetters: this.frontDoor.deadLetters,
      agents: this.agentPlaces,
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
    });
    this.dashboard = this.observability.dashboard;
    this.alarms = this.observability.alarms;
  }
}
