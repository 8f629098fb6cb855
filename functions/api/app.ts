/**
 * The HTTP API (README, "The HTTP API") as one Hono app: the same app behind API Gateway and in
 * `npm run dev`. Handlers are thin: parse, call the core, map the answer or a typed error.
 */
import { type Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import * as z from 'zod';
import {
  ApprovalAlreadyDecided,
  ApprovalNotFound,
  type ApprovalStore,
  RunNotRunning,
  type TaskTokens,
  decideApproval,
  waitingFor,
} from '../core/approvals.js';
import { type ConversationStore, conversationIdOf } from '../core/conversation.js';
import { type AgentName } from '../core/names.js';
import { StepwiseError } from '../core/errors.js';
import { IdempotencyConflict, type IntakeDeps, SessionBusy, cancelRun, createRun, createRunBody } from '../core/intake.js';
import type { RunStore } from '../core/runs.js';
import { PathRejected, type Workspace } from '../core/workspace.js';
import { openApiDocument } from './openapi.js';
import { DecisionBody, type ErrorBody, IdempotencyKey, MessagesQuery, type RunView, ToolUseId } from './schemas.js';

export interface ApiDeps extends IntakeDeps {
  runs: RunStore;
  conversations: ConversationStore;
  workspaceFor(runId: string): Workspace;
  approvals: ApprovalStore;
  /** Wakes a run that waits for a decision. */
  tokens: TaskTokens;
  /** Where unexpected errors are reported (the function's structured logger); stderr when absent. */
  log?: ErrorLog;
  /** The local event bus (`npm run dev` only): `/_local/events` (README, "Events"). */
  localEvents?: {
    put(entry: LocalPutEntry): Promise<unknown>;
    list(): unknown[];
    /** Events the intake refused, with the reasons. */
    deadLetters(): unknown[];
  };
}

/** The one thing the API logs: an error it did not expect, answered with a 500. */
export interface ErrorLog {
  error(message: string, error: Error): void;
}

/** A PutEvents entry as `POST /_local/events` takes it. */
export const LocalPutEntry = z.object({
  Source: z.string().min(1),
  DetailType: z.string().min(1),
  Detail: z.union([z.string(), z.record(z.string(), z.unknown())]),
  EventBusName: z.string().optional(),
});
export type LocalPutEntry = z.infer<typeof LocalPutEntry>;

/** An error the API answers with its own status. */
export class ApiError extends StepwiseError {
  override readonly name = 'ApiError';
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly issues?: { path: string; message: string }[],
  ) {
    super(message);
  }
}

const pageSize = 100;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'InvalidJson', 'The body is not valid JSON.', [{ path: '(body)', message: 'is not valid JSON' }]);
  }
}

function issuesOf(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: i.path.join('.') || '(body)', message: i.message }));
}

/** Refuses a body sent as anything but JSON. */
function requireJson(c: Context): void {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/json\b/i.test(type)) {
    throw new ApiError(400, 'UnsupportedMediaType', 'Send the body as JSON with "Content-Type: application/json".', [
      { path: 'Content-Type', message: `must be application/json, not "${type || '(none)'}"` },
    ]);
  }
}

/** The HTTP status of each error the core names for a client's mistake. */
const clientErrors: [new (...args: never[]) => StepwiseError, ContentfulStatusCode][] = [
  [IdempotencyConflict, 409],
  [SessionBusy, 409],
  [ApprovalAlreadyDecided, 409],
  [RunNotRunning, 409],
  [ApprovalNotFound, 404],
];

export function createApi(deps: ApiDeps): Hono {
  const app = new Hono();

  app.onError((error, c) => {
    if (error instanceof ApiError) {
      const body: ErrorBody = { error: { code: error.code, message: error.message, ...(error.issues ? { issues: error.issues } : {}) } };
      return c.json(body, error.status);
    }
    const status = clientErrors.find(([type]) => error instanceof type)?.[1];
    if (status) return c.json({ error: { code: error.name, message: error.message } } satisfies ErrorBody, status);
    if (deps.log) deps.log.error('Unhandled API error', error);
    else console.error(JSON.stringify({ level: 'error', message: 'Unhandled API error', error: String(error) }));
    return c.json({ error: { code: 'InternalError', message: 'Something went wrong on our side.' } }, 500);
  });
  app.notFound((c) => c.json({ error: { code: 'NotFound', message: `No route ${c.req.method} ${c.req.path}.` } }, 404));

  app.get('/health', (c) => c.json({ ok: true }));

  const document = openApiDocument();
  // The deployment's list of models (STEPWISE_ALLOWED_MODELS) is part of the body's schema.
  const runBody = createRunBody(deps.allowedModels);
  app.get('/openapi.json', (c) => c.json(document));

  app.post('/runs', async (c) => {
    requireJson(c);
    const key = c.req.header('idempotency-key');
    const parsedKey = key === undefined ? undefined : IdempotencyKey.safeParse(key);
    if (parsedKey && !parsedKey.success) {
      throw new ApiError(400, 'ValidationFailed', 'The Idempotency-Key header is invalid.', [
        { path: 'Idempotency-Key', message: parsedKey.error.issues[0]?.message ?? 'invalid' },
      ]);
    }
    const parsed = runBody.safeParse(parseJson(await c.req.text()));
    if (!parsed.success) throw new ApiError(400, 'ValidationFailed', 'The run request is invalid.', issuesOf(parsed.error));
    return c.json(await createRun(parsed.data, deps, parsedKey?.success ? { idempotencyKey: parsedKey.data } : {}), 202);
  });

  if (deps.localEvents) {
    const bus = deps.localEvents;
    app.post('/_local/events', async (c) => {
      const entry = LocalPutEntry.safeParse(parseJson(await c.req.text()));
      if (!entry.success) throw new ApiError(400, 'ValidationFailed', 'The event entry is invalid.', issuesOf(entry.error));
      return c.json(await bus.put(entry.data), 200);
    });
    app.get('/_local/events', (c) => c.json({ items: bus.list() }));
    app.get('/_local/dead-letters', (c) => c.json({ items: bus.deadLetters() }));
  }

  const loadRun = async (runId: string) => {
    const run = await deps.runs.get(runId);
    if (!run) throw new ApiError(404, 'RunNotFound', `No run ${runId}.`);
    return run;
  };

  app.get('/runs/:runId', async (c) => {
    const run = await loadRun(c.req.param('runId'));
    // Only a running run that gates tools can wait; the requests of an ended (e.g. cancelled) run are moot.
    const gates = run.status === 'running' && (run.approvals?.tools.length ?? 0) > 0;
    const waiting = gates ? waitingFor(await deps.approvals.list(run.runId)) : [];
    return c.json({ ...run, waitingFor: waiting } satisfies RunView);
  });

  app.post('/runs/:runId/approvals/:toolUseId', async (c) => {
    const run = await loadRun(c.req.param('runId'));
    const toolUseId = ToolUseId.safeParse(c.req.param('toolUseId'));
    if (!toolUseId.success) throw new ApiError(400, 'ValidationFailed', 'The tool call id is invalid.', [{ path: 'toolUseId', message: toolUseId.error.issues[0]?.message ?? 'invalid' }]);
    requireJson(c);
    const body = DecisionBody.safeParse(parseJson(await c.req.text()));
    if (!body.success) throw new ApiError(400, 'ValidationFailed', 'The decision is invalid.', issuesOf(body.error));
    return c.json(await decideApproval(run, toolUseId.data, body.data, deps), 202);
  });

  app.post('/runs/:runId/cancel', async (c) => {
    const run = await loadRun(c.req.param('runId'));
    if (!(await cancelRun(run.runId, deps))) {
      throw new ApiError(409, 'RunNotRunning', `Run ${run.runId} is ${run.status}; only a running run can be cancelled.`);
    }
    return c.json({ runId: run.runId, status: 'cancelled', phase: 'cancelled' }, 202);
  });

  app.get('/runs/:runId/messages', async (c) => {
    const run = await loadRun(c.req.param('runId'));
    const query = MessagesQuery.safeParse(c.req.query());
    if (!query.success) throw new ApiError(400, 'ValidationFailed', 'The query is invalid.', issuesOf(query.error));
    const agents: AgentName[] = query.data.agent ? [query.data.agent] : run.mode === 'single' ? ['single'] : ['architect', 'coder'];
    const after = query.data.cursor === undefined ? -1 : Number(query.data.cursor);
    const items = [];
    for (const agent of agents) {
      const { messages } = await deps.conversations.load(conversationIdOf(run.runId, agent, run.sessionId));
      for (const m of messages) {
        if (m.meta.runId === run.runId) items.push({ seq: m.seq, agent, role: m.role, content: m.content });
      }
    }
    const page = items.filter((_, i) => i > after).slice(0, pageSize);
    const last = after + page.length;
    return c.json({ items: page, ...(last < items.length - 1 ? { nextCursor: String(last) } : {}) });
  });

  app.get('/runs/:runId/files', async (c) => {
    const run = await loadRun(c.req.param('runId'));
    const { entries, truncated } = await deps.workspaceFor(run.runId).list('', 10_000);
    return c.json({ items: entries, ...(truncated ? { truncated } : {}) });
  });

  app.get('/runs/:runId/files/:path{.+}', async (c) => {
    const run = await loadRun(c.req.param('runId'));
    // Hono has already decoded the parameter (leaving malformed escapes as they are).
    const path = c.req.param('path');
    let bytes: Uint8Array | undefined;
    try {
      bytes = await deps.workspaceFor(run.runId).read(path);
    } catch (error) {
      if (error instanceof PathRejected) throw new ApiError(400, 'InvalidPath', error.message);
      throw error;
    }
    if (!bytes) throw new ApiError(404, 'FileNotFound', `No file ${path} in run ${run.runId}.`);
    return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { 'content-type': contentType(path) });
  });

  return app;
}

function contentType(path: string): string {
  if (/\.(md|txt|ts|js|json|py|go|rs|java|css|html|ya?ml|toml|csv|sh)$/i.test(path)) return 'text/plain; charset=utf-8';
  return 'application/octet-stream';
}
