/**
 * The functions' environment: every variable Stepwise reads, checked with zod when a Lambda module
 * or the local runtime loads, so a missing or malformed one fails fast, naming it.
 */
import * as z from 'zod';
import { approvableTool, approvableToolsText } from '../core/approvals/policy.js';
import { IamIdentity } from '../core/callers/types.js';
import { defaultContextEditing, defaultContextPolicy } from '../core/compaction/types.js';
import { defaultMaxSchedulesPerCaller } from '../core/schedules/types.js';
import { defaultMaxStreamsPerCaller } from '../core/stream/types.js';
import { type ExternalToolNames } from '../core/tools/external/types.js';
import { externalToolsConfig } from '../core/tools/external/external-tools.js';
import { toolNames } from '../core/tools/builtin/builtin.js';

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
