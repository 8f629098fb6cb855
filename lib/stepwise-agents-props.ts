/**
 * What StepwiseAgents takes and gives (lib/stepwise-agents.ts): its props, and its state machines
 * and functions as it exposes them.
 */
import type { Duration } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { AgentDefinitionConfig, WorkflowDefinitionConfig } from './agent-definitions.js';
import type { EventBusSettings } from './event-bus.js';
import type { LambdaToolConfig, McpServerConfig } from './external-tools.js';
import type { ApiAuth, BudgetProps, CallerSettings } from './front-door.js';
import type { StorageProps } from './storage.js';

/**
 * How Stepwise is configured: the model, the API's auth, limits, where alarms go, and the table,
 * bucket and event bus it creates or takes from you (`existingTableObj`, `existingBucketObj`,
 * `existingEventBusObj`, or `tableProps`, `bucketProps`, `eventBusProps` to adjust its own).
 */
export interface StepwiseAgentsProps extends StorageProps, EventBusSettings {
  /**
   * Who answers the model calls: Anthropic's API (key in Secrets Manager), Amazon Bedrock (the
   * inference function's IAM role, no key), or `scripted` (turns replayed from a file, for tests).
   * @default 'anthropic'
   */
  readonly provider?: 'anthropic' | 'bedrock' | 'scripted';
  /**
   * The model every run uses unless it asks for another; on Bedrock a Claude model id or
   * cross-Region inference profile id.
   * @default 'claude-sonnet-4-5'
   */
  readonly model?: string;
  /**
   * Further models a run may ask for with `model`; the deployment's model is always allowed.
   * On Bedrock, the inference function may invoke exactly these and the deployment's model.
   * @default [] (only the deployment's model)
   */
  readonly allowedModels?: string[];
  /**
   * The output token limit of one inference step.
   * @default 8192
   */
  readonly maxTokens?: number;
  /**
   * The model's context window in tokens; conversations are compacted at 80% of it.
   * @default 200000
   */
  readonly contextWindowTokens?: number;
  /**
   * How callers of the HTTP API authenticate: SigV4-signed requests (`iam`) or a JWT authorizer.
   * @default { type: 'iam' }
   */
  readonly auth?: ApiAuth;
  /**
   * Callers: separate reviewers, a quota of running runs per caller, event sources trusted to act for others.
   * @default {} (owners may decide their own runs' calls, no quota, no trusted sources)
   */
  readonly callers?: CallerSettings;
  /**
   * Budgets: a default per run (USD, tokens) and a daily USD limit per caller.
   * @default {} (no budgets: a run may still name its own)
   */
  readonly budgets?: BudgetProps;
  /**
   * Name of an existing Secrets Manager secret holding the Anthropic API key.
   * @default a new secret, `<stack name>/anthropic-api-key`, whose value you set after deploying
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
   * Whether a run that has taken in untrusted content (a result of an `untrusted` tool, or of a
   * child run) waits for a reviewer before each `egress` call, whatever its own rules say
   * (docs/tools.md, "Capabilities").
   * @default true
   */
  readonly reviewEgressAfterUntrusted?: boolean;
  /**
   * How long a tool call waits for a reviewer before it is denied with reason `timeout`.
   * @default Duration.hours(24)
   */
  readonly approvalTimeout?: Duration;
  /**
   * The longest a run may take, reviewer waits included. Past it the orchestrator's execution
   * times out and the run is marked failed with `ExecutionTimedOut`; its session lock lapses a
   * quarter of an hour later even if that mark was lost. The default leaves a day for the agents'
   * work (far above what a run of 200 iterations takes) plus one full wait for a reviewer; raise it
   * when runs wait for several reviews.
   * @default Duration.hours(24) plus `approvalTimeout` (48 hours)
   */
  readonly runTimeout?: Duration;
  /**
   * Remote MCP servers (Streamable HTTP) whose tools the agents may call, as `<server>__<tool>`;
   * listed once at a run's start. A server that is down then is left out of that run.
   * @default [] (none)
   */
  readonly mcpServers?: readonly McpServerConfig[];
  /**
   * Your own Lambda functions (any language) as tools; only the tool function may invoke them.
   * @default [] (none)
   */
  readonly tools?: readonly LambdaToolConfig[];
  /**
   * Your own agents (`POST /runs { agent }`), beside the built-in `assistant`, `architect` and
   * `coder`: each a name, description, instructions (its system prompt) and tools (built-in,
   * `tools`, `<server>__<tool>` or `<server>__*` of `mcpServers`, or `agent:<name>`). Checked at
   * synth: an unknown tool, model or agent, or agents calling each other in a cycle, fails it with
   * one line naming the definition and field. Bundled into the code of the functions that start runs.
   * @default [] (the built-ins only)
   */
  readonly agents?: readonly AgentDefinitionConfig[];
  /**
   * Your own workflows (`POST /runs { workflow }`), beside the built-in `plan-and-build`: steps of
   * agents, each an agent's name or `{ parallel: [names] }`.
   * @default [] (the built-in only)
   */
  readonly workflows?: readonly WorkflowDefinitionConfig[];
  /**
   * The most event streams open at once (the stream function's reserved concurrency): each open
   * stream holds one Lambda execution for up to 14 minutes, and a cap keeps watchers from taking
   * the concurrency the agent loop needs. Further streams are refused with 429 until one ends. A
   * reservation must leave the account 100 unreserved executions: an account whose quota is under
   * 200 lowers it, or says `'unreserved'` (no reservation, no cap).
   * @default 100
   */
  readonly maxConcurrentStreams?: number | 'unreserved';
  /**
   * The most event streams one caller may have open at once (`GET /runs/{runId}/events` and
   * `POST /agui` alike); past it `429 TooManyStreams`.
   * @default 10
   */
  readonly maxStreamsPerCaller?: number;
  /**
   * Where the alarms (failed, timed-out, throttled and interrupted executions, Lambda errors, API 5xx, dead letters) notify.
   * @default none: the alarms only change state
   */
  readonly alarmTopic?: sns.ITopic;
}

/** The state machines of a Stepwise deployment. */
export interface StepwiseStateMachines {
  /** One execution per run: phases, nested agent loops, the completion event. */
  readonly orchestrator: sfn.StateMachine;
  /** One execution per agent of a run: inference, tools, inference, … */
  readonly agentLoop: sfn.StateMachine;
}

/** The Lambda functions of a Stepwise deployment. */
export interface StepwiseFunctions {
  /** One inference step: the only function that calls the model. */
  readonly inference: lambda.IFunction;
  /** One tool call, with workspace credentials narrowed to its run. */
  readonly tool: lambda.IFunction;
  /** Opens approval requests of gated tool calls. */
  readonly approval: lambda.IFunction;
  /** The HTTP API. */
  readonly api: lambda.IFunction;
  /** The live event stream, behind its function URL. */
  readonly stream: lambda.IFunction;
  /** `Stepwise Run Requested` events from the bus. */
  readonly intake: lambda.IFunction;
  /** Orchestrator executions that ended outside their states (Step Functions status events). */
  readonly executionEnded: lambda.IFunction;
}

