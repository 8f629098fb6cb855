/**
 * Builds the adapters from validated environment variables: done once, when a Lambda module or
 * the local runtime loads (habit 7, docs/code-habits.md). A missing variable fails fast, naming it.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { Documents } from '../adapters/dynamo/documents.js';
import type { AgentDefinitionStore } from '../core/agents/types.js';
import { type ApprovalStore } from '../core/approvals/types.js';
import type { BudgetSettings, SpendStore } from '../core/budgets/types.js';
import { type ContextEditing, type ContextPolicy, defaultContextEditing, defaultContextPolicy } from '../core/compaction/types.js';
import type { ConversationStore } from '../core/conversation/types.js';
import type { ForkCopies } from '../core/fork/types.js';
import type { IdempotencyStore, RunSlots, SessionLocks } from '../core/intake/types.js';
import type { LiveText, LiveTextReader } from '../core/live/types.js';
import { type ModelProvider, ModelNotConfigured, type ModelSettings } from '../core/model/types.js';
import type { RunStore } from '../core/runs/types.js';
import { type ScheduleStore } from '../core/schedules/types.js';
import { type RunEventSources, type StreamSlots } from '../core/stream/types.js';
import { defaultFollowSettings } from '../core/stream/follow.js';
import { type ToolCatalogStore, type ToolSource } from '../core/tools/external/types.js';
import { ExternalTools } from '../core/tools/external/external-tools.js';
import { type PlanStore, type ToolLimits } from '../core/tools/types.js';
import { defaultToolLimits } from '../core/tools/registry.js';
import type { Workspace } from '../core/workspace/types.js';
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

export { Env, externalConfig, externalToolNamesOf, readEnv, readExternalToolsEnv } from './env.js';
import { type Env, readEnv } from './env.js';


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
