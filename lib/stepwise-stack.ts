import { CfnOutput, Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { toolNames } from '../functions/core/approvals.js';
import { AgentLoop } from './agent-loop.js';
import { bedrockModel, grantBedrockInvoke } from './bedrock-access.js';
import { type ApiAuth, FrontDoor } from './front-door.js';
import { StepwiseFunction } from './function.js';
import { Observability } from './observability.js';
import { Orchestrator } from './orchestrator.js';
import { Storage } from './storage.js';

export interface StepwiseStackProps extends StackProps {
  /**
   * Who serves the model: the Anthropic API (key in Secrets Manager) or Amazon Bedrock (the
   * inference function's IAM role, no key).
   * @default 'anthropic'
   */
  readonly provider?: 'anthropic' | 'bedrock' | 'scripted';
  /**
   * The deployment's model; on Bedrock a Claude model id or cross-Region inference profile id.
   * @default 'claude-sonnet-4-5'
   */
  readonly model?: string;
  /**
   * Further models a run may ask for with `model`; the deployment's model is always allowed.
   * On Bedrock, the inference function may invoke exactly these and the deployment's model.
   * @default [] (only the deployment's model)
   */
  readonly allowedModels?: string[];
  /** @default 8192 */
  readonly maxTokens?: number;
  /**
   * The model's context window in tokens; conversations are compacted at 80% of it.
   * @default 200000
   */
  readonly contextWindowTokens?: number;
  /** @default { type: 'iam' } */
  readonly auth?: ApiAuth;
  /**
   * Name of an existing Secrets Manager secret holding the Anthropic API key.
   * @default a new secret, `<stack>/anthropic-api-key`, whose value you set after deploying
   */
  readonly anthropicSecretName?: string;
  /**
   * Iterations an agent-loop execution runs before it continues in a fresh one.
   * @default 60
   */
  readonly iterationsPerExecution?: number;
  /**
   * Tools whose calls wait for a reviewer's approval in every run; a run may add more.
   * @default [] (none)
   */
  readonly approvalTools?: string[];
  /**
   * How long a tool call waits for a reviewer before it is denied with reason `timeout`.
   * @default Duration.hours(24)
   */
  readonly approvalTimeout?: Duration;
  /**
   * Where the alarms notify.
   * @default none: the alarms only change state
   */
  readonly alarmTopic?: sns.ITopic;
}

/** Stepwise in one stack: storage, the step functions, the agent loop and the orchestrator. */
export class StepwiseStack extends Stack {
  public readonly storage: Storage;
  public readonly inference: StepwiseFunction;
  public readonly tool: StepwiseFunction;
  /** Opens approval requests of gated tool calls and stores the token each waits on. */
  public readonly approval: StepwiseFunction;
  public readonly agentLoop: AgentLoop;
  public readonly orchestrator: Orchestrator;
  public readonly bus: events.EventBus;
  public readonly frontDoor: FrontDoor;
  /** The Anthropic API key's secret; none when the model is served by Bedrock. */
  public readonly anthropicKey?: secretsmanager.ISecret;
  /** The models runs may ask for, the deployment's own first. */
  public readonly allowedModels: string[];
  /** The dashboard and the alarms. */
  public readonly observability: Observability;
  /** The role tool calls assume, narrowed per run. */
  public readonly workspaceRole: iam.Role;

  constructor(scope: Construct, id: string, props: StepwiseStackProps = {}) {
    super(scope, id, props);
    const unknown = (props.approvalTools ?? []).filter((name) => !toolNames.includes(name));
    if (unknown.length) throw new Error(`approvalTools names unknown tools: ${unknown.join(', ')} (known: ${toolNames.join(', ')}).`);
    this.storage = new Storage(this, 'Storage');
    const { table, bucket } = this.storage;
    const shared = { STEPWISE_TABLE: table.tableName, STEPWISE_BUCKET: bucket.bucketName };

    const provider = props.provider ?? 'anthropic';
    const model = props.model ?? 'claude-sonnet-4-5';
    this.allowedModels = [...new Set([model, ...(props.allowedModels ?? [])])];
    // Fail at synth, naming the id, rather than on the first run.
    if (provider === 'bedrock') for (const id of this.allowedModels) bedrockModel(id);

    // The model key lives in Secrets Manager and is read at run time, never put in the template.
    // Bedrock needs none: its calls are signed with the inference function's role.
    if (provider === 'anthropic') {
      this.anthropicKey = props.anthropicSecretName
        ? secretsmanager.Secret.fromSecretNameV2(this, 'AnthropicApiKey', props.anthropicSecretName)
        : new secretsmanager.Secret(this, 'AnthropicApiKey', {
            secretName: `${this.stackName}/anthropic-api-key`,
            description: 'The Anthropic API key Stepwise calls the model with. Set its value after deploying.',
          });
      if (this.anthropicKey instanceof secretsmanager.Secret) {
        Validations.of(this.anthropicKey).acknowledge({
          id: 'AwsSolutions-SMG4',
          reason: 'A third-party API key: it is rotated in the Anthropic console, not by a rotation Lambda.',
        });
      }
    }

    // Timeouts nest (DESIGN invariant 3): one model call 240 s, with no SDK retry, < Lambda
    // 300 s < state 360 s; the state machine's Retry is the only retry loop.
    this.inference = new StepwiseFunction(this, 'Inference', {
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
      },
    });
    this.anthropicKey?.grantRead(this.inference.function);
    if (provider === 'bedrock') grantBedrockInvoke(this.inference.role, this.allowedModels);
    this.storage.grantConversationMemory(this.inference.function);
    this.storage.grantRunRecords(this.inference.function, 'update');

    // Tools reach workspaces only through this role, assumed per call with a session policy
    // that narrows it to the run's own prefix (DESIGN invariant 7).
    this.tool = new StepwiseFunction(this, 'Tool', { handler: 'tool', timeout: Duration.minutes(2), environment: shared });
    this.workspaceRole = new iam.Role(this, 'WorkspaceRole', {
      assumedBy: new iam.ArnPrincipal(this.tool.role.roleArn),
      description: 'Assumed by the tool function for one run at a time, narrowed by a session policy to workspaces/<runId>/.',
      maxSessionDuration: Duration.hours(1),
    });
    this.storage.grantWorkspaces(this.workspaceRole, 'readWrite');
    this.workspaceRole.grantAssumeRole(this.tool.role);
    this.tool.function.addEnvironment('STEPWISE_WORKSPACE_ROLE_ARN', this.workspaceRole.roleArn);
    this.storage.grantConversationMemory(this.tool.function);
    this.storage.grantRunRecords(this.tool.function, 'updateOnly');
    this.storage.grantApprovals(this.tool.function, 'settle');

    this.approval = new StepwiseFunction(this, 'Approval', { handler: 'approval', timeout: Duration.seconds(30), environment: shared });
    this.storage.grantConversationRead(this.approval.function);
    this.storage.grantApprovals(this.approval.function, 'request');

    this.bus = new events.EventBus(this, 'Bus', { eventBusName: `${this.stackName}-events` });
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

    this.orchestrator = new Orchestrator(this, 'Orchestrator', {
      table,
      agentLoop: this.agentLoop.stateMachine,
      bus: this.bus,
    });

    this.frontDoor = new FrontDoor(this, 'FrontDoor', {
      storage: this.storage,
      orchestrator: this.orchestrator.stateMachine,
      agentLoop: this.agentLoop.stateMachine,
      bus: this.bus,
      approvalTools: props.approvalTools ?? [],
      allowedModels: this.allowedModels,
      ...(props.auth ? { auth: props.auth } : {}),
    });
    this.observability = new Observability(this, 'Observability', {
      orchestrator: this.orchestrator.stateMachine,
      agentLoop: this.agentLoop.stateMachine,
      functions: {
        Inference: this.inference.function,
        Tool: this.tool.function,
        Approval: this.approval.function,
        Api: this.frontDoor.apiFunction.function,
        Intake: this.frontDoor.intakeFunction.function,
      },
      deadLetters: this.frontDoor.deadLetters,
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
    });
    new CfnOutput(this, 'ApiUrl', { value: this.frontDoor.api.apiEndpoint });
    new CfnOutput(this, 'EventBusName', { value: this.bus.eventBusName });
  }
}
