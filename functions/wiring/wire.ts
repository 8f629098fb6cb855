/**
 * Builds the adapters from validated environment variables: done once, when a Lambda module or
 * the local runtime loads (habit 7, docs/code-habits.md). A missing variable fails fast, naming it.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { Documents } from '../adapters/dynamo/documents.js';
import * as z from 'zod';
import type { AgentDefinitionStore } from '../core/agents/types.js';
import { type ApprovalStore } from '../core/approvals/types.js';
import { approvableTool, approvableToolsText } from '../core/approvals/policy.js';
import type { BudgetSettings, SpendStore } from '../core/budgets/types.js';
import { IamIdentity } from '../core/callers/types.js';
import { type ContextEditing, type ContextPolicy, defaultContextEditing, defaultContextPolicy } from '../core/compaction/types.js';
import type { ConversationStore } from '../core/conversation/types.js';
import type { ForkCopies } from '../core/fork/types.js';
import type { IdempotencyStore, RunSlots, SessionLocks } from '../core/intake/types.js';
import type { LiveText, LiveTextReader } from '../core/live/types.js';
import { type ModelProvider, ModelNotConfigured, type ModelSettings } from '../core/model/types.js';
import type { RunStore } from '../core/runs/types.js';
import { type ScheduleStore, defaultMaxSchedulesPerCaller } from '../core/schedules/types.js';
import { type RunEventSources, type StreamSlots, defaultMaxStreamsPerCaller } from '../core/stream/types.js';
import { defaultFollowSettings } from '../core/stream/follow.js';
import { type ExternalToolNames, type ToolCatalogStore, type ToolSource } from '../core/tools/external/types.js';
import { ExternalTools, externalToolsConfig } from '../core/tools/external/external-tools.js';
import { type PlanStore, type ToolLimits } from '../core/tools/types.js';
import { defaultToolLimits } from '../core/tools/registry.js';
import type { Workspace } from '../core/workspace/types.js';
import { toolNames } from '../core/tools/builtin/builtin.js';
import { BlobStore } from '../adapters/s3/blobs.js';
import { DynamoAgentDefinitionStore } from '../adapters/dynamo/agents.js';
import { DynamoApprovalStore } from '../adapters/dynamo/approvals.js';
import { DynamoConversationStore } from '../adapters/dynamo/conversations.js';
import { DynamoIdempotencyStore, DynamoSessionLocks } from '../adapters/dynamo/intake.js';
import { DynamoRunSlots, DynamoStreamSlots } from '../adapters/dynamo/run-slots.js';
import { DynamoLiveText } from '../adapters/dynamo/live-text.js';
import { DynamoRunStore } from '../adapters/dynamo/runs.js';
import { DynamoScheduleStore } from '../adapters/dynamo/schedules.js';
import { DynamoSpendStore } from '../adapters/dynamo/spend.js';
import { DynamoToolCatalogStore } from '../adapters/dynamo/tool-catalog.js';
import { S3Workspace, copyWorkspaceFiles } from '../adapters/s3/workspace.js';
import { noTracer, type TraceSettings } from '../core/traces/types.js';
import { otlpSettings, providerName } from './traces.js';
import { S3MemoryStore } from '../adapters/s3/memory.js';
import type { MemoryStore } from '../core/memory/types.js';

/** A JSON array in a variable; its items are checked where they are used (`wiring/external.ts`). */
const jsonList = z
  .string()
  .default('[]')
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'is not valid JSON' });
      return z.NEVER;
    }
  })
  .pipe(z.array(z.unknown(), { error: 'must be a JSON array' }));

/** A comma-separated list in a variable. */
const commaList = z
  .string()
  .default('')
  .transform((list) => list.split(',').map((item) => item.trim()).filter(Boolean));

/** The external tools' configuration (inference and tool functions; the local stack reads it to tell its API their names). */
const ExternalToolsEnv = z.object({
  /** Remote MCP servers, JSON `[{ name, url, agents? }]`; their tools are offered as `<server>__<tool>`. */
  STEPWISE_MCP_SERVERS: jsonList,
  /** Lambda functions as tools, JSON `[{ name, description, inputSchema, functionName, agents? }]`. */
  STEPWISE_LAMBDA_TOOLS: jsonList,
});

export const Env = z.object({
  STEPWISE_TABLE: z.string().min(1),
  STEPWISE_BUCKET: z.string().min(1),
  STEPWISE_PROVIDER: z.enum(['anthropic', 'bedrock', 'scripted']).default('anthropic'),
  STEPWISE_MODEL: z.string().min(1).default('claude-sonnet-4-5'),
  STEPWISE_MAX_TOKENS: z.coerce.number().int().positive().default(8192),
  /** The model's context window, in tokens; the conversation is compacted before it fills. */
  STEPWISE_CONTEXT_WINDOW_TOKENS: z.coerce.number().int().positive().default(defaultContextPolicy.windowTokens),
  /** The share of the window at which older turns are summarized. */
  STEPWISE_COMPACT_AT: z.coerce.number().positive().max(1).default(defaultContextPolicy.compactAt),
  /** Context editing: old tool results cleared from what the model is sent (`off` to send every result). */
  STEPWISE_CONTEXT_EDITING: z.enum(['on', 'off']).default('on'),
  /** Clear once the prompt is over this many tokens. @default 60% of the window */
  STEPWISE_CLEAR_TOOL_RESULTS_AT: z.coerce.number().int().positive().optional(),
  /** The results of the newest calls never cleared. */
  STEPWISE_CLEAR_KEEP_TOOL_USES: z.coerce.number().int().nonnegative().default(defaultContextEditing.keepToolUses),
  /** Clear in batches of at least this many tokens. @default 10% of the window */
  STEPWISE_CLEAR_AT_LEAST_TOKENS: z.coerce.number().int().positive().optional(),
  /** Tools whose results are never cleared, comma-separated. */
  STEPWISE_CLEAR_EXCLUDE_TOOLS: z.string().optional(),
  /**
   * The models a run may ask for, comma-separated (API and intake functions). Unset, any model:
   * the deployed stack always sets it, to the deployment's model unless cdk.json lists more.
   */
  STEPWISE_ALLOWED_MODELS: z
    .string()
    .optional()
    .transform((list) => {
      const models = (list ?? '').split(',').map((m) => m.trim()).filter(Boolean);
      return models.length ? models : undefined;
    }),
  /** Milliseconds for one model call; below the inference Lambda's timeout (invariant 3, docs/ARCHITECTURE.md). */
  STEPWISE_MODEL_TIMEOUT_MS: z.coerce.number().int().positive().default(120_000),
  /** The SDK's own retries of one model call; 0 when deployed, where the state machine retries. */
  STEPWISE_MODEL_MAX_RETRIES: z.coerce.number().int().min(0).max(3).default(1),
  STEPWISE_SCRIPT: z.string().optional(),
  /** The largest file a tool may write or read whole, in bytes. */
  STEPWISE_MAX_FILE_BYTES: z.coerce.number().int().positive().default(10 * 1024 * 1024),
  ANTHROPIC_API_KEY: z.string().optional(),
  /** Deployed: the Secrets Manager secret holding the key, read at run time (never in the template). */
  ANTHROPIC_API_KEY_SECRET_ARN: z.string().optional(),
  ANTHROPIC_BASE_URL: z.string().url().optional(),
  /** Loopback endpoints of the local emulators; unset when deployed. */
  STEPWISE_DYNAMODB_ENDPOINT: z.string().url().optional(),
  STEPWISE_S3_ENDPOINT: z.string().url().optional(),
  STEPWISE_SFN_ENDPOINT: z.string().url().optional(),
  /** The local Bedrock stand-in (`local/stand-ins/bedrock-api.ts`), signed with the emulators' fixed pair. */
  STEPWISE_BEDROCK_ENDPOINT: z.string().url().optional(),
  STEPWISE_LAMBDA_ENDPOINT: z.string().url().optional(),
  ...ExternalToolsEnv.shape,
  /**
   * The deployment's agents and workflows (API and intake functions; docs/agents.md): JSON arrays,
   * inline or `@<path>` to a file. Deployed, the construct bundles them into the code instead.
   */
  STEPWISE_AGENTS: z.string().optional(),
  STEPWISE_WORKFLOWS: z.string().optional(),
  /** Milliseconds to connect to an MCP server and list all its tools, together (inference step). */
  STEPWISE_MCP_LIST_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Milliseconds one MCP or Lambda tool call may take, connecting and retrying included; below the tool Lambda's timeout (invariant 3, docs/ARCHITECTURE.md). */
  STEPWISE_EXTERNAL_TOOL_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  /** The evals state machine (API function): `POST /evals` starts it (docs/evals.md, "Deployed"). */
  STEPWISE_EVALS_ARN: z.string().optional(),
  /** The orchestrator state machine (API and intake functions). */
  STEPWISE_ORCHESTRATOR_ARN: z.string().optional(),
  /**
   * Seconds after which a session lock is taken over whatever its holder's record says (API and
   * intake functions): the orchestrator's timeout plus a margin. No lease when unset.
   */
  STEPWISE_SESSION_LEASE_SECONDS: z.coerce.number().int().positive().optional(),
  /** The queue for events that fail validation (intake function). */
  STEPWISE_DEAD_LETTER_URL: z.string().optional(),
  /** Deployed tool function: the role it assumes, per run, with credentials narrowed to that run. */
  STEPWISE_WORKSPACE_ROLE_ARN: z.string().optional(),
  /**
   * Tools whose calls wait for a reviewer in every run, comma-separated (API and intake functions):
   * built-in tools and the external tools the next two variables name (checked below).
   */
  STEPWISE_APPROVAL_TOOLS: commaList,
  /**
   * The names of the configured MCP servers and Lambda tools, comma-separated (API and intake
   * functions, which never call them, so are not told their URLs or functions): what approval
   * policies may name besides the built-in tools.
   */
  STEPWISE_MCP_SERVER_NAMES: commaList,
  STEPWISE_LAMBDA_TOOL_NAMES: commaList,
  /** How API callers are identified (API function): `iam` (SigV4, the caller's ARN) or `jwt` (API Gateway's JWT authorizer). */
  STEPWISE_AUTH: z.enum(['iam', 'jwt']).default('iam'),
  /** JWT mode: the claim that names a caller's tenant; no tenants when unset. */
  STEPWISE_TENANT_CLAIM: z.string().min(1).optional(),
  /** IAM mode: how an assumed-role caller is named, by its role (`role`) or its whole session ARN (`session`). */
  STEPWISE_IAM_IDENTITY: IamIdentity.default('role'),
  /** IAM mode: ARN patterns (`*` and `?` within one `/` part, `**` across parts) of reviewers and of admins, comma-separated. */
  STEPWISE_REVIEWER_ARNS: commaList,
  STEPWISE_ADMIN_ARNS: commaList,
  /** `true`: the owner of a run may not decide its own calls. */
  STEPWISE_SEPARATE_REVIEWER: z.enum(['true', 'false']).default('false').transform((value) => value === 'true'),
  /** `false` lets a run that has taken in untrusted content call `egress` tools without a reviewer (docs/tools.md, "Capabilities"). */
  STEPWISE_REVIEW_EGRESS_AFTER_UNTRUSTED: z.enum(['true', 'false']).default('true').transform((value) => value === 'true'),
  /** The most runs one principal may have running at once (API and intake functions); no limit when unset. */
  STEPWISE_MAX_RUNNING_RUNS: z.coerce.number().int().positive().optional(),
  /** Event sources trusted to start runs on behalf of another caller (`onBehalfOf`), comma-separated. */
  STEPWISE_TRUSTED_SOURCES: commaList,
  /** The budget of a run that names none, in USD and in tokens (API and intake functions); none when unset. */
  STEPWISE_DEFAULT_RUN_MAX_USD: z.coerce.number().positive().optional(),
  STEPWISE_DEFAULT_RUN_MAX_TOKENS: z.coerce.number().int().positive().optional(),
  /** What one caller's runs may cost per UTC day, in USD (API, intake and inference functions); no limit when unset. */
  STEPWISE_DAILY_MAX_USD: z.coerce.number().positive().optional(),
  /**
   * The longest one event stream stays open, in seconds (stream function): it then ends cleanly
   * and the client resumes from its last cursor. Deployed, a minute below the function's
   * 15-minute timeout; unset, the reader's default of 14 minutes (the local server).
   */
  STEPWISE_STREAM_MAX_SECONDS: z.coerce.number().int().positive().optional(),
  /** The most event streams one caller may have open at once (API and stream functions; `429 TooManyStreams` past it). */
  STEPWISE_MAX_STREAMS_PER_CALLER: z.coerce.number().int().positive().default(defaultMaxStreamsPerCaller),
  /**
   * JWT mode, stream function: a function URL has no JWT authorizer, so the function verifies
   * tokens itself, as the HTTP API's authorizer does: issued by this issuer,
   */
  STEPWISE_JWT_ISSUER: z.string().url().optional(),
  /** for one of these audiences (`aud`; `client_id` only in a token without `aud`), comma-separated, */
  STEPWISE_JWT_AUDIENCE: commaList,
  /** signed by a key of this set; by default the `jwks_uri` of the issuer's OpenID configuration. */
  STEPWISE_JWKS_URL: z.string().url().optional(),
  /** The A2A JSON-RPC interface the agent card names (API function: the stream URL's `/a2a`); the request's own origin when unset (docs/a2a.md). */
  STEPWISE_A2A_URL: z.string().url().optional(),
  /** Schedules (API function, docs/schedules.md): the stack's EventBridge Scheduler group, the role it puts run requests with, the bus it puts them on. */
  STEPWISE_SCHEDULE_GROUP: z.string().min(1).optional(),
  STEPWISE_SCHEDULER_ROLE_ARN: z.string().min(1).optional(),
  STEPWISE_EVENT_BUS_ARN: z.string().min(1).optional(),
  /** The most schedules one caller may have (API function). */
  STEPWISE_MAX_SCHEDULES_PER_CALLER: z.coerce.number().int().positive().default(defaultMaxSchedulesPerCaller),
  AWS_REGION: z.string().default('us-east-1'),
}).superRefine((env, ctx) => {
  // A tool the deployment does not have would gate nothing: refused, as at synth (never silently ungated).
  const external = externalToolNamesOf(env);
  const known = approvableTool(external);
  for (const name of env.STEPWISE_APPROVAL_TOOLS.filter((tool) => !known(tool))) {
    ctx.addIssue({ code: 'custom', path: ['STEPWISE_APPROVAL_TOOLS'], message: `unknown tool ${JSON.stringify(name)}; known: ${approvableToolsText(external)}` });
  }
});
export type Env = z.infer<typeof Env>;

/** The external tools the API and intake functions are told of, by name. */
export function externalToolNamesOf(env: Pick<Env, 'STEPWISE_MCP_SERVER_NAMES' | 'STEPWISE_LAMBDA_TOOL_NAMES'>): ExternalToolNames {
  return { mcpServers: env.STEPWISE_MCP_SERVER_NAMES, lambdaTools: env.STEPWISE_LAMBDA_TOOL_NAMES };
}

/** Parses the environment, naming every missing or malformed variable. */
export function readEnv(source: Record<string, string | undefined>): Env {
  return parseEnv(Env, source);
}

/**
 * The configured servers and tools, checked together: unique names, no built-in name taken. Here,
 * not beside the tool sources, so the local stack can read it without loading the functions'
 * telemetry before it has set the environment that telemetry reads when it loads.
 */
export function externalConfig(env: Pick<Env, 'STEPWISE_MCP_SERVERS' | 'STEPWISE_LAMBDA_TOOLS'>) {
  const parsed = externalToolsConfig(toolNames).safeParse({ mcpServers: env.STEPWISE_MCP_SERVERS, lambdaTools: env.STEPWISE_LAMBDA_TOOLS });
  if (!parsed.success) {
    const variable = (path: PropertyKey[]) => (path[0] === 'mcpServers' ? 'STEPWISE_MCP_SERVERS' : 'STEPWISE_LAMBDA_TOOLS');
    const problems = parsed.error.issues.map((i) => `${variable(i.path)}.${i.path.slice(1).join('.')}: ${i.message}`).join('; ');
    throw new Error(`Stepwise is misconfigured: ${problems}`);
  }
  return parsed.data;
}

/** Only the external tools' configuration variables (parsed as `readEnv` parses them). */
export function readExternalToolsEnv(source: Record<string, string | undefined>): z.infer<typeof ExternalToolsEnv> {
  return parseEnv(ExternalToolsEnv, source);
}

function parseEnv<T extends z.ZodType>(schema: T, source: Record<string, string | undefined>): z.infer<T> {
  const parsed = schema.safeParse(source);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Stepwise is misconfigured: ${problems}`);
  }
  return parsed.data;
}

/** The credentials the local emulators accept (s3rver's fixed pair); nothing real. */
export const localCredentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/** Few SDK attempts: the state machine's `Retry` is the outer loop (docs/reliability.md, "Retries"). */
export const sdkAttempts = 3;

/**
 * A client builds each command's middleware stack once per command class instead of on every
 * request (the SDK's `cacheMiddleware`): 70 µs less a DynamoDB request and 100 µs an S3 one,
 * measured without the emulators. Safe here: nothing adds middleware to a single command; a
 * request sent with options (an abort signal) goes through a client that keeps none (`awsClients`;
 * docs/costs.md, "Why each request is cheap").
 */
export const cacheMiddleware = true;

/**
 * The clients' logger, as the SDK's default: warnings to the console (the SDK sends them there
 * when its logger is the default one; the HTTP handler's "socket usage at capacity" among them),
 * nothing else. It has no `info`, the level the SDK logs every request at, with its whole input
 * and output walked for sensitive fields, work it skips when the logger has no `info` (some 25 µs
 * a request, measured without the emulators).
 */
export const sdkLogger = { debug() {}, warn: (...content: unknown[]) => console.warn(...content), error() {} } as Omit<SdkLogger, 'info'> as SdkLogger;
type SdkLogger = NonNullable<DynamoDBClientConfig['logger']>;

/**
 * The functions' AWS clients. `signalled` is a DynamoDB client for requests sent with an abort
 * signal (live text's writes): the SDK drops every stack a client keeps when a request comes with
 * options, so such requests get a client of their own and the others' stacks stay kept.
 */
export function awsClients(env: Env): { dynamo: DynamoDBClient; signalled: DynamoDBClient; s3: S3Client } {
  const local = env.STEPWISE_DYNAMODB_ENDPOINT !== undefined || env.STEPWISE_S3_ENDPOINT !== undefined;
  const credentials = local ? { credentials: localCredentials } : {};
  const dynamoClient = (keepsStacks: boolean) =>
    new DynamoDBClient({
      region: env.AWS_REGION,
      maxAttempts: sdkAttempts,
      cacheMiddleware: keepsStacks,
      logger: sdkLogger,
      ...(env.STEPWISE_DYNAMODB_ENDPOINT ? { endpoint: env.STEPWISE_DYNAMODB_ENDPOINT } : {}),
      ...credentials,
    });
  const dynamo = dynamoClient(cacheMiddleware);
  const signalled = dynamoClient(false);
  const s3 = new S3Client({
    region: env.AWS_REGION,
    maxAttempts: sdkAttempts,
    cacheMiddleware,
    logger: sdkLogger,
    ...(env.STEPWISE_S3_ENDPOINT
      ? {
          endpoint: env.STEPWISE_S3_ENDPOINT,
          forcePathStyle: true,
          // The local S3 emulator stores aws-chunked framing inside objects otherwise.
          requestChecksumCalculation: 'WHEN_REQUIRED' as const,
          responseChecksumValidation: 'WHEN_REQUIRED' as const,
        }
      : {}),
    ...credentials,
  });
  return { dynamo, signalled, s3 };
}

export interface Wiring {
  env: Env;
  conversations: ConversationStore;
  runs: RunStore;
  model: ModelProvider;
  settings: ModelSettings;
  context: ContextPolicy;
  /** Which old tool results the model is no longer sent; absent when turned off. */
  contextEditing?: ContextEditing;
  workspaceFor(runId: string): Workspace;
  /** A memory scope by its key prefix (docs/memory.md). */
  memoryFor(prefix: string): MemoryStore;
  plans: PlanStore;
  limits: ToolLimits;
  idempotency: IdempotencyStore;
  sessions: SessionLocks;
  /** The slots of the running-runs quota (`STEPWISE_MAX_RUNNING_RUNS`). */
  slots: RunSlots;
  /** The slots of each caller's open event streams (`STEPWISE_MAX_STREAMS_PER_CALLER`). */
  streamSlots: StreamSlots;
  approvals: ApprovalStore;
  /** Copies a fork's conversation and files (the API function's fork route). */
  forks: ForkCopies;
  /** The default run budget and the daily limit per caller. */
  budgets: BudgetSettings;
  /** What each caller's runs cost per day (the daily limit's counter). */
  spend: SpendStore;
  /** The answers being generated: written by the inference step, read by the event stream. */
  liveText: LiveText & LiveTextReader;
  /** What a run's event stream reads (the API function). */
  events: RunEventSources;
  /** MCP and Lambda tools, when the function asked for them and some are configured. */
  externalTools?: ExternalTools;
  /** Runs' external tool catalogs (the API checks a reviewer's edited input of an external tool against them). */
  catalogs: ToolCatalogStore;
  /** The versions of the agent definitions runs follow. */
  agentStore: AgentDefinitionStore;
  /** Whether an `egress` call of a run that has taken in untrusted content waits for a reviewer. */
  reviewEgressAfterUntrusted: boolean;
  /** Schedules (the API creates them, the intake admits their firings). */
  schedules: ScheduleStore;
  /** Where the function's spans go (docs/traces.md): nowhere unless it asked for a tracer (`WireParts.traces`). */
  traces: TraceSettings;
  /** Whether an OTLP traces endpoint is set: the intake then records each run's trace. */
  tracing: boolean;
}

/**
 * The parts only some functions need, passed in by them so each Lambda bundle carries only the
 * SDKs it uses: the model (inference) and per-run scoped workspaces (tools).
 */
export interface WireParts {
  model?: ModelProvider | ((env: Env) => ModelProvider);
  workspaces?: (env: Env, s3: S3Client) => (runId: string) => S3Workspace;
  /** Memory scopes, with credentials narrowed to each (tools). */
  memories?: (env: Env, s3: S3Client) => (prefix: string) => S3MemoryStore;
  /** The sources of external tools: listing ones (inference) or calling ones (tools). */
  externalTools?: (env: Env) => ToolSource[];
  /** The tracer of a function that sends spans (`wiring/tracer.ts`); the others bundle no OpenTelemetry SDK. */
  traces?: (source: Record<string, string | undefined>, env: Env) => TraceSettings;
}

/** The adapters every function shares, plus the parts it asks for. */
export function wire(source: Record<string, string | undefined>, parts: WireParts = {}): Wiring {
  const env = readEnv(source);
  const { dynamo, signalled, s3 } = awsClients(env);
  const doc = new Documents(dynamo);
  const blobs = new BlobStore(s3, env.STEPWISE_BUCKET);
  const runs = new DynamoRunStore({ doc, table: env.STEPWISE_TABLE, blobs });
  const conversations = new DynamoConversationStore({ doc, table: env.STEPWISE_TABLE, blobs });
  const sources = parts.externalTools?.(env) ?? [];
  const catalogs = new DynamoToolCatalogStore(doc, env.STEPWISE_TABLE, blobs);
  const externalTools = sources.length
    ? new ExternalTools(sources, catalogs, {
        log: (message, detail) => console.warn(JSON.stringify({ level: 'warn', message, ...detail })),
      })
    : undefined;
  const liveText = new DynamoLiveText(new Documents(signalled), env.STEPWISE_TABLE);
  // No run outlives the orchestrator's timeout: a session lock or quota slot held longer was lost.
  const lease = env.STEPWISE_SESSION_LEASE_SECONDS ? { leaseSeconds: env.STEPWISE_SESSION_LEASE_SECONDS } : {};
  return {
    ...(externalTools ? { externalTools } : {}),
    traces: parts.traces?.(source, env) ?? { tracer: noTracer, provider: providerName(env.STEPWISE_PROVIDER) },
    tracing: otlpSettings(source) !== undefined,
    catalogs,
    agentStore: new DynamoAgentDefinitionStore(doc, env.STEPWISE_TABLE),
    reviewEgressAfterUntrusted: env.STEPWISE_REVIEW_EGRESS_AFTER_UNTRUSTED,
    env,
    conversations,
    forks: {
      conversation: (from, to, beforeSeq) => conversations.copyBefore(from, to, beforeSeq),
      workspace: copyWorkspaceFiles(s3, env.STEPWISE_BUCKET),
    },
    runs,
    plans: runs,
    limits: { ...defaultToolLimits, maxFileBytes: env.STEPWISE_MAX_FILE_BYTES },
    idempotency: new DynamoIdempotencyStore(doc, env.STEPWISE_TABLE),
    sessions: new DynamoSessionLocks(doc, env.STEPWISE_TABLE, lease),
    slots: new DynamoRunSlots(doc, env.STEPWISE_TABLE, lease),
    // A slot a crashed stream never gave back is free a minute after that stream would have ended.
    streamSlots: new DynamoStreamSlots(doc, env.STEPWISE_TABLE, { leaseSeconds: (env.STEPWISE_STREAM_MAX_SECONDS ?? defaultFollowSettings.maxDurationMs / 1000) + 60 }),
    approvals: new DynamoApprovalStore(doc, env.STEPWISE_TABLE),
    schedules: new DynamoScheduleStore(doc, env.STEPWISE_TABLE),
    budgets: budgetSettings(env),
    spend: new DynamoSpendStore(doc, env.STEPWISE_TABLE),
    liveText,
    events: {
      conversationFrom: (conversationId, from, runId) => conversations.itemsFrom(conversationId, from, runId),
      liveTexts: liveText,
      runWithApprovals: (runId) => runs.getWithApprovals(runId),
    },
    model:
      typeof parts.model === 'function'
        ? parts.model(env)
        : (parts.model ?? { generate: () => Promise.reject(new ModelNotConfigured('This function is not wired to call the model.')) }),
    settings: { model: env.STEPWISE_MODEL, maxTokens: env.STEPWISE_MAX_TOKENS },
    context: {
      ...defaultContextPolicy,
      windowTokens: env.STEPWISE_CONTEXT_WINDOW_TOKENS,
      compactAt: env.STEPWISE_COMPACT_AT,
    },
    ...(env.STEPWISE_CONTEXT_EDITING === 'on' ? { contextEditing: contextEditingOf(env) } : {}),
    workspaceFor: (parts.workspaces ?? plainWorkspaces)(env, s3),
    memoryFor: (parts.memories ?? plainMemories)(env, s3),
  };
}

/** The deployment's budgets, from the environment. */
export function budgetSettings(env: Env): BudgetSettings {
  const defaultRun = {
    ...(env.STEPWISE_DEFAULT_RUN_MAX_USD !== undefined ? { maxUsd: env.STEPWISE_DEFAULT_RUN_MAX_USD } : {}),
    ...(env.STEPWISE_DEFAULT_RUN_MAX_TOKENS !== undefined ? { maxTokens: env.STEPWISE_DEFAULT_RUN_MAX_TOKENS } : {}),
  };
  return {
    ...(Object.keys(defaultRun).length ? { defaultRun } : {}),
    ...(env.STEPWISE_DAILY_MAX_USD !== undefined ? { dailyMaxUsd: env.STEPWISE_DAILY_MAX_USD } : {}),
  };
}

/** Workspaces on the function's own S3 client: local runs, and functions that only read. */
export function plainWorkspaces(env: Env, s3: S3Client): (runId: string) => S3Workspace {
  return (runId) => new S3Workspace(s3, env.STEPWISE_BUCKET, runId);
}

/**
 * The deployment's context editing: by default it starts at 60% of the window, below compaction's
 * threshold, and clears in batches of a tenth of the window.
 */
export function contextEditingOf(env: Env): ContextEditing {
  const window = env.STEPWISE_CONTEXT_WINDOW_TOKENS;
  const exclude = (env.STEPWISE_CLEAR_EXCLUDE_TOOLS ?? '').split(',').map((t) => t.trim()).filter(Boolean);
  return {
    triggerTokens: env.STEPWISE_CLEAR_TOOL_RESULTS_AT ?? Math.round(window * (defaultContextEditing.triggerTokens / defaultContextPolicy.windowTokens)),
    keepToolUses: env.STEPWISE_CLEAR_KEEP_TOOL_USES,
    clearAtLeastTokens: env.STEPWISE_CLEAR_AT_LEAST_TOKENS ?? Math.round(window * ((defaultContextEditing.clearAtLeastTokens ?? 0) / defaultContextPolicy.windowTokens)),
    ...(exclude.length ? { excludeTools: exclude } : {}),
  };
}

/** Memory scopes on the function's own S3 client: local runs, and the API (whose grant reads and deletes `memories/*`). */
export function plainMemories(env: Env, s3: S3Client): (prefix: string) => S3MemoryStore {
  return (prefix) => new S3MemoryStore(s3, env.STEPWISE_BUCKET, prefix);
}
