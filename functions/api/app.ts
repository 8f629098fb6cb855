/**
 * The HTTP API (docs/ARCHITECTURE.md) as one Hono app: the same app behind API Gateway and in
 * `npm run dev`. Each route is declared once, with the schemas that validate its request and
 * describe its answers; `GET /openapi.json` is generated from those declarations. Handlers are
 * thin: read the validated request, call the core, map the answer or a typed error.
 */
import { OpenAPIHono, createRoute } from '@hono/zod-openapi';
import type { Env } from 'hono';
import { createMiddleware } from 'hono/factory';
import * as z from 'zod';
import { policyTools } from '../core/approvals/policy.js';
import { type ApprovalPolicy, type ApprovalStore, RunNotRunning, type TaskTokens } from '../core/approvals/types.js';
import { decideApproval } from '../core/approvals/decide.js';
import { decisionsOf, waitingFor } from '../core/approvals/views.js';
import { type Access, type AccessPolicy, type Caller, Forbidden, TokenRequest } from '../core/callers/types.js';
import { accessTo, holds } from '../core/callers/access.js';
import { type ConversationStore } from '../core/conversation/types.js';
import { conversationIdOf } from '../core/conversation/conversation.js';
import { type AgentName } from '../core/agents/types.js';
import { type ForkCopies } from '../core/fork/types.js';
import { forkBody, forkRun } from '../core/fork/fork.js';
import { ClientRunId, createRunBody } from '../core/intake/request.js';
import { type IntakeDeps } from '../core/intake/types.js';
import { cancelRun, createRun } from '../core/intake/create.js';
import type { Run, RunStore } from '../core/runs/types.js';
import type { ToolCatalogStore } from '../core/tools/external/types.js';
import { FileTooLarge, PathRejected, type Workspace, WorkspaceRefused } from '../core/workspace/types.js';
import type { Authenticate } from './callers.js';
import { AguiRunInput, EventsHeaders, EventsQuery, type StreamDeps, answerStream, eventStream, runBodyOf } from './stream.js';
import { type ErrorLog, FileNotFound, InvalidJson, InvalidPath, RunNotFound, UnsupportedMediaType, ValidationFailed, answerError, refuseInvalid } from './errors.js';
import {
  Accepted,
  DecisionBody,
  DecisionRecorded,
  ErrorBody,
  FilesPage,
  Health,
  IdempotencyKey,
  MessagesPage,
  MessagesQuery,
  RunId,
  RunView,
  RunsPage,
  RunsQuery,
  ToolUseId,
} from './schemas.js';

export interface ApiDeps extends IntakeDeps, StreamDeps {
  runs: RunStore;
  conversations: ConversationStore;
  workspaceFor(runId: string): Workspace;
  /** Copies a fork's conversation and workspace (`POST /runs/{runId}/fork`). */
  forks: ForkCopies;
  approvals: ApprovalStore;
  /** Wakes a run that waits for a decision. */
  tokens: TaskTokens;
  /** Runs' external tool catalogs: the schemas a reviewer's edited input of an MCP or Lambda tool is checked against. */
  catalogs?: Pick<ToolCatalogStore, 'getCatalog'>;
  /** Who is calling: read once per request, before any run is looked at. */
  authenticate: Authenticate;
  /** Deployment settings of who may do what (`separateReviewer`). */
  access?: AccessPolicy;
  /** Where unexpected errors are reported (the function's structured logger); stderr when absent. */
  log?: ErrorLog;
  /** A short-lived link to a run's file, for files too large for a response; without it they are refused (413). */
  fileLinks?: (runId: string, path: string) => Promise<string>;
  /** The local token issuer (`npm run dev` only): `POST /_local/tokens`. */
  localTokens?: { issue(request: TokenRequest): Promise<string> };
  /** The local event bus (`npm run dev` only): the `/_local/*` routes. */
  localEvents?: {
    put(entry: LocalPutEntry): Promise<unknown>;
    list(): unknown[];
    /** Events the intake refused, with the reasons. */
    deadLetters(): unknown[];
  };
}

/** A PutEvents entry as `POST /_local/events` takes it. */
export const LocalPutEntry = z.object({
  Source: z.string().min(1),
  DetailType: z.string().min(1),
  Detail: z.union([z.string(), z.record(z.string(), z.unknown())]),
  EventBusName: z.string().optional(),
});
export type LocalPutEntry = z.infer<typeof LocalPutEntry>;

const pageSize = 100;

/**
 * The largest file the files route returns in its body. A Lambda response is at most 6 MB and
 * binary bodies travel base64-encoded (4/3 larger), so 4 MiB leaves room for the envelope.
 */
export const maxFileResponseBytes = 4 * 1024 * 1024;

/** The document's header; its paths come from the routes. */
const documentInfo = {
  openapi: '3.1.0',
  info: {
    title: 'Stepwise',
    version: '1.0.0',
    description: 'Start and follow tool-using LLM agent runs: one agent, or an Architect that plans and a Coder that builds.',
  },
};

const json = <T extends z.ZodType>(schema: T) => ({ 'application/json': { schema } });
const refusal = (description: string) => ({ description, content: json(ErrorBody) });
const noRun = { 404: refusal('No such run.') };
const runParams = z.object({ runId: RunId });

/**
 * Refuses a body that is not JSON, by its type or its text, before the route's schema sees it:
 * those refusals have codes of their own (`UnsupportedMediaType`, `InvalidJson`). The body is
 * parsed once; the schema's validator reads the parsed value. (Typed with the plain `Env` so that
 * a route's middleware list still gives its handler `c.var.run`.)
 */
const jsonBody = createMiddleware<Env>(async (c, next) => {
  const type = c.req.header('content-type');
  if (!/^application\/json\b/i.test(type ?? '')) throw new UnsupportedMediaType(type);
  try {
    await c.req.json();
  } catch {
    throw new InvalidJson();
  }
  await next();
});

/** Whether a run's policy may stop calls (tools it gates, or tools its rules name), so it may have approvals to show. */
function mayStop(policy: ApprovalPolicy | undefined): boolean {
  return policy !== undefined && policyTools(policy).length > 0;
}

/** The app on its dependencies, its routes declared and documented; `GET /openapi.json` serves the document. */
/** What a request carries through the app: its caller (set on every route under /runs). */
export type ApiEnv = { Variables: { caller: Caller } };

export function createApi(deps: ApiDeps): OpenAPIHono<ApiEnv> {
  const app = new OpenAPIHono<ApiEnv>({ defaultHook: refuseInvalid });
  app.onError(answerError(deps.log));
  app.notFound((c) => c.json({ error: { code: 'NotFound', message: `No route ${c.req.method} ${c.req.path}.` } } satisfies ErrorBody, 404));

  /** Reads the caller of every route under /runs, once per request. */
  const withCaller = createMiddleware<{ Variables: { caller: Caller } }>(async (c, next) => {
    const env: unknown = c.env;
    const lambdaEvent = typeof env === 'object' && env !== null && 'event' in env ? env.event : undefined;
    c.set('caller', await deps.authenticate({ authorization: c.req.header('authorization'), lambdaEvent }));
    await next();
  });
  app.use('/runs', withCaller);
  app.use('/runs/*', withCaller);
  app.use('/agui', withCaller);

  /**
   * Loads the run a path names before anything else is checked, for what the caller wants to do
   * with it. A run the caller may not see is answered exactly as a missing one (404), so nobody
   * learns that someone else's run exists; a run it sees but may not act on is a 403.
   */
  const withRun = (access: Access) =>
    createMiddleware<{ Variables: { run: Run; caller: Caller } }>(async (c, next) => {
      const runId = c.req.param('runId') ?? '';
      const valid = RunId.safeParse(runId);
      if (!valid.success) {
        throw new ValidationFailed('The path parameter runId is invalid.', [{ path: 'runId', message: valid.error.issues[0]?.message ?? 'invalid' }]);
      }
      const run = await deps.runs.get(runId);
      const verdict = run ? accessTo(c.var.caller, run.owner, access, deps.access) : 'hidden';
      if (!run || verdict === 'hidden') throw new RunNotFound(`No run ${runId}.`);
      if (verdict === 'forbidden') throw new Forbidden(forbiddenMessage(access, run, c.var.caller, deps.access));
      c.set('run', run);
      await next();
    });

  app.openapi(
    createRoute({ method: 'get', path: '/health', summary: 'Liveness (local server)', responses: { 200: { description: 'Up.', content: json(Health) } } }),
    (c) => c.json({ ok: true } as const, 200),
  );

  let document: ReturnType<typeof app.getOpenAPI31Document> | undefined;
  app.openapi(
    createRoute({ method: 'get', path: '/openapi.json', summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1.' } } }),
    // Generated on first request, when every route is declared; most cold starts never need it.
    (c) => c.json((document ??= templatePaths(app.getOpenAPI31Document(documentInfo))), 200),
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/runs',
      summary: 'Start a run',
      middleware: [jsonBody] as const,
      request: {
        headers: z.object({ 'Idempotency-Key': IdempotencyKey.optional() }),
        // The deployment's list of models (STEPWISE_ALLOWED_MODELS) and its tools are part of the body's schema.
        body: { required: true, content: json(createRunBody(deps)) },
      },
      responses: {
        202: { description: 'Accepted.', content: json(Accepted) },
        400: refusal('Invalid input; `issues` names each bad field.'),
        409: refusal('The Idempotency-Key was used with another body, or the session has a running run.'),
        429: refusal('`TooManyRuns`: the caller has as many runs running as the deployment allows; `BudgetExceeded`: its daily budget is spent.'),
      },
    }),
    async (c) => {
      const key = c.req.valid('header')['Idempotency-Key'];
      const caller = c.var.caller;
      return c.json(await createRun(c.req.valid('json'), deps, { caller, ...(key === undefined ? {} : { idempotencyKey: key }) }), 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/runs',
      summary: "The caller's runs (or, for reviewers and admins, their tenant's), newest first",
      request: { query: RunsQuery },
      responses: {
        200: { description: 'One page of runs.', content: json(RunsPage) },
        400: refusal('Invalid query or cursor.'),
        403: refusal('`scope=tenant` needs the approve or admin role.'),
      },
    }),
    async (c) => {
      const caller = c.var.caller;
      const { status, limit, cursor, scope } = c.req.valid('query');
      if (scope === 'tenant' && !holds(caller, 'approve')) throw new Forbidden('Listing a tenant\'s runs needs the approve or admin role.');
      const page = await deps.runs.list({
        scope: scope === 'tenant' ? { tenant: caller.tenant } : { owner: caller },
        ...(status ? { status } : {}),
        limit,
        ...(cursor ? { cursor } : {}),
      });
      const items = await Promise.all(
        page.items.map(async ({ approvals, owner: _owner, ...summary }) => {
          const gates = summary.status === 'running' && mayStop(approvals);
          return { ...summary, waitingFor: gates ? waitingFor(await deps.approvals.list(summary.runId)).length : 0 };
        }),
      );
      return c.json({ items, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/runs/{runId}',
      summary: 'A run',
      middleware: [withRun('read')] as const,
      request: { params: runParams },
      responses: { 200: { description: 'The run.', content: json(RunView) }, ...noRun },
    }),
    async (c) => {
      const run = c.var.run;
      const approvals = mayStop(run.approvals) ? await deps.approvals.list(run.runId) : [];
      // Only a running run can wait; the requests of an ended (e.g. cancelled) run are moot.
      const waiting = run.status === 'running' ? waitingFor(approvals) : [];
      return c.json({ ...run, waitingFor: waiting, decisions: decisionsOf(approvals) } satisfies RunView, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/runs/{runId}/approvals/{toolUseId}',
      summary: 'Approve or deny a tool call that waits for a reviewer',
      description: 'Approve: the tool runs. Deny: the model gets an error result saying a reviewer denied the call (with the reason), and the run goes on.',
      middleware: [withRun('decide'), jsonBody] as const,
      request: { params: z.object({ runId: RunId, toolUseId: ToolUseId }), body: { required: true, content: json(DecisionBody) } },
      responses: {
        202: { description: 'Recorded; the run goes on.', content: json(DecisionRecorded) },
        400: refusal('Invalid body; `issues` names each bad field.'),
        403: refusal('The caller may see the run but not decide its calls (no approve role, or its own run where reviewers must be separate).'),
        404: refusal('No such run, or no approval request for that tool call.'),
        409: refusal('The call was already decided (by a reviewer or by the timeout), or the run is not running.'),
      },
    }),
    async (c) => c.json(await decideApproval(c.var.run, c.req.valid('param').toolUseId, c.req.valid('json'), c.var.caller.principal, deps), 202),
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/runs/{runId}/cancel',
      summary: 'Cancel a running run',
      middleware: [withRun('cancel')] as const,
      request: { params: runParams },
      responses: {
        202: { description: 'Cancelled.', content: json(Accepted) },
        403: refusal('A reviewer may see the run but only its owner or an admin may cancel it.'),
        409: refusal('The run is not running.'),
        ...noRun,
      },
    }),
    async (c) => {
      const run = c.var.run;
      if (!(await cancelRun(run.runId, deps))) {
        throw new RunNotRunning(`Run ${run.runId} is ${run.status}; only a running run can be cancelled.`);
      }
      return c.json({ runId: run.runId, status: 'cancelled', phase: 'cancelled' } as const, 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/runs/{runId}/fork',
      summary: 'Fork a run: a new single-mode run from one of its user messages',
      description:
        "A new single-mode run of the caller that starts with the source agent's conversation before `fromSeq` (a user message that " +
        'carries no tool results), then `goal`, or the message at `fromSeq` again ("retry from here"); its workspace starts as a ' +
        'copy of the source\'s. The source is not changed. `GET /runs/{runId}` of the fork shows `forkedFrom`.',
      middleware: [withRun('read'), jsonBody] as const,
      request: {
        params: runParams,
        headers: z.object({ 'Idempotency-Key': IdempotencyKey.optional() }),
        // The deployment's list of models (STEPWISE_ALLOWED_MODELS) is part of the body's schema.
        body: { required: true, content: json(forkBody(deps)) },
      },
      responses: {
        202: { description: 'The fork was created (or already existed) and is on its way.', content: json(Accepted) },
        400: refusal('Invalid body, or `fromSeq`/`agent` names nothing the source can be forked at; `issues` names the field.'),
        ...noRun,
        409: refusal('The Idempotency-Key was used with another request, or the source is too large to fork (ForkTooLarge).'),
        429: refusal('The caller has as many running runs as the deployment allows.'),
      },
    }),
    async (c) => {
      const key = c.req.valid('header')['Idempotency-Key'];
      const options = { caller: c.var.caller, ...(key === undefined ? {} : { idempotencyKey: key }) };
      return c.json(await forkRun(c.var.run, c.req.valid('json'), deps, options), 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/runs/{runId}/messages',
      summary: "A run's transcript, in pages",
      middleware: [withRun('read')] as const,
      request: { params: runParams, query: MessagesQuery },
      responses: { 200: { description: 'One page of messages.', content: json(MessagesPage) }, 400: refusal('Invalid query.'), ...noRun },
    }),
    async (c) => {
      const run = c.var.run;
      const query = c.req.valid('query');
      const agents: AgentName[] = query.agent ? [query.agent] : run.mode === 'single' ? ['single'] : ['architect', 'coder'];
      const after = query.cursor === undefined ? -1 : Number(query.cursor);
      const items = [];
      for (const agent of agents) {
        const { messages } = await deps.conversations.load(conversationIdOf(run.runId, agent, run.sessionId, run.owner));
        for (const m of messages) {
          if (m.meta.runId === run.runId) items.push({ seq: m.seq, agent, role: m.role, content: m.content });
        }
      }
      const page = items.filter((_, i) => i > after).slice(0, pageSize);
      const last = after + page.length;
      return c.json({ items: page, ...(last < items.length - 1 ? { nextCursor: String(last) } : {}) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/runs/{runId}/events',
      summary: "The run's events as they happen (AG-UI over server-sent events), resumable",
      description:
        'Replays the run from its start (or after `Last-Event-ID` / `?after=`), then follows it live, and ends after RUN_FINISHED or RUN_ERROR. ' +
        'Every watcher and every reconnect sees the same events with the same ids.',
      middleware: [withRun('read')] as const,
      request: { params: runParams, query: EventsQuery, headers: EventsHeaders },
      responses: {
        200: eventStream,
        204: { description: 'The run has ended and no event follows the cursor.' },
        400: refusal('A cursor that this run\'s stream did not give (`InvalidCursor`).'),
        ...noRun,
      },
    }),
    async (c) => answerStream(c, c.var.run, c.req.valid('header')['Last-Event-ID'] ?? c.req.valid('query').after, deps),
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/agui',
      summary: 'Run one turn for an AG-UI client and stream its events',
      description:
        'Takes an AG-UI RunAgentInput: `threadId` is the session, the last user message the goal, `forwardedProps.stepwise` the other `POST /runs` fields (mode single). ' +
        'Starts the run as `POST /runs` does (a `runId` that is a valid Stepwise run id makes a repeat start it once) and answers with its event stream.',
      middleware: [jsonBody] as const,
      request: { body: { required: true, content: json(AguiRunInput) } },
      responses: {
        200: eventStream,
        400: refusal('Invalid input; `issues` names each bad field.'),
        409: refusal('The thread has a running run, or the run id is taken.'),
        429: refusal('Too many runs running.'),
      },
    }),
    async (c) => {
      const input = c.req.valid('json');
      const runId = ClientRunId.safeParse(input.runId).success ? input.runId : undefined;
      const started = await createRun(runBodyOf(input, deps), deps, { caller: c.var.caller, ...(runId ? { runId } : {}) });
      const run = await deps.runs.get(started.runId);
      if (!run) throw new Error(`Run ${started.runId} vanished after it was created.`);
      return answerStream(c, run, undefined, deps);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/runs/{runId}/files',
      summary: "The run's workspace files",
      middleware: [withRun('read')] as const,
      request: { params: runParams },
      responses: { 200: { description: 'The files.', content: json(FilesPage) }, ...noRun },
    }),
    async (c) => {
      const { entries, truncated } = await deps.workspaceFor(c.var.run.runId).list('', 10_000);
      return c.json({ items: entries, ...(truncated ? { truncated } : {}) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      // `{path{.+}}` is Hono's parameter that spans "/"; the document writes it `{path}`.
      path: '/runs/{runId}/files/{path{.+}}',
      summary: 'One file of the workspace',
      middleware: [withRun('read')] as const,
      request: { params: z.object({ runId: RunId, path: z.string().meta({ description: 'The file path; it may contain "/".' }) }) },
      responses: {
        200: { description: 'The file bytes.', content: { 'application/octet-stream': { schema: z.string().meta({ format: 'binary' }) } } },
        400: refusal('The path is not a valid workspace path.'),
        ...noRun,
        302: { description: `The file is larger than a response carries (${maxFileResponseBytes} bytes): \`Location\` is a presigned link to it, valid for 5 minutes.` },
        413: refusal(`The file is larger than a response can carry (${maxFileResponseBytes} bytes), and no link can be signed.`),
      },
    }),
    async (c) => {
      const run = c.var.run;
      // Hono has already decoded the parameter (leaving malformed escapes as they are).
      const { path } = c.req.valid('param');
      let bytes: Uint8Array | undefined;
      try {
        bytes = await deps.workspaceFor(run.runId).read(path, { maxBytes: maxFileResponseBytes });
      } catch (error) {
        if (error instanceof PathRejected) throw new InvalidPath(error.message);
        if (error instanceof WorkspaceRefused) throw new InvalidPath(error.message);
        if (error instanceof FileTooLarge) {
          // Too large for a response: a short-lived link to the object itself, when the deployment can sign one.
          if (deps.fileLinks) return c.redirect(await deps.fileLinks(run.runId, path), 302);
          throw new FileTooLarge(
            path,
            error.size,
            error.limit,
            `${path} is ${error.size} bytes; this route returns files of at most ${error.limit} bytes. Read it from the run's workspace in S3 (workspaces/${run.runId}/).`,
          );
        }
        throw error;
      }
      if (!bytes) throw new FileNotFound(`No file ${path} in run ${run.runId}.`);
      return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { 'content-type': contentType(path) });
    },
  );

  if (deps.localTokens) {
    const issuer = deps.localTokens;
    app.openapi(
      createRoute({
        method: 'post',
        path: '/_local/tokens',
        hide: true,
        middleware: [jsonBody] as const,
        request: { body: { required: true, content: json(TokenRequest) } },
        responses: { 200: { description: 'A token of the local issuer.' } },
      }),
      async (c) => c.json({ token: await issuer.issue(c.req.valid('json')) }, 200),
    );
  }

  if (deps.localEvents) {
    const bus = deps.localEvents;
    // The local event bus exists only in `npm run dev`: declared like the others, left out of the document.
    app.openapi(
      createRoute({
        method: 'post',
        path: '/_local/events',
        hide: true,
        middleware: [jsonBody] as const,
        request: { body: { required: true, content: json(LocalPutEntry) } },
        responses: { 200: { description: 'The PutEvents answer.' } },
      }),
      async (c) => c.json(await bus.put(c.req.valid('json')), 200),
    );
    app.openapi(
      createRoute({ method: 'get', path: '/_local/events', hide: true, responses: { 200: { description: 'The events put on the bus.' } } }),
      (c) => c.json({ items: bus.list() }, 200),
    );
    app.openapi(
      createRoute({ method: 'get', path: '/_local/dead-letters', hide: true, responses: { 200: { description: 'The events the intake refused.' } } }),
      (c) => c.json({ items: bus.deadLetters() }, 200),
    );
  }

  return app;
}

/** Why a caller that sees a run may not do this with it. */
function forbiddenMessage(access: Access, run: Run, caller: Caller, policy: AccessPolicy = {}): string {
  if (access === 'cancel') return `Only the owner of run ${run.runId} or an admin may cancel it.`;
  if (!holds(caller, 'approve')) return 'Deciding tool calls needs the approve role.';
  return policy.separateReviewer ? `Run ${run.runId} is yours; another reviewer must decide its calls.` : 'Not allowed.';
}


/** Writes Hono's parameters with a pattern (`{path{.+}}`) as the plain templates OpenAPI knows (`{path}`). */
function templatePaths<T extends { paths?: Record<string, unknown> }>(document: T): T {
  const paths = Object.entries(document.paths ?? {}).map(([path, item]) => [path.replace(/\{(\w+)\{[^}]*\}\}/g, '{$1}'), item]);
  return { ...document, paths: Object.fromEntries(paths) };
}

function contentType(path: string): string {
  if (/\.(md|txt|ts|js|json|py|go|rs|java|css|html|ya?ml|toml|csv|sh)$/i.test(path)) return 'text/plain; charset=utf-8';
  return 'application/octet-stream';
}
