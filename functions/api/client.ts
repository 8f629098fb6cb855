/**
 * The one client of the HTTP API, shared by the CLI and the console: Hono's `hc`, typed by the
 * app's own route declarations (`ApiApp`, imported as a type only, so no server code reaches
 * either bundle), so a request's path, parameters, body and answer are checked against the routes
 * at compile time. How a request travels is the caller's: the CLI signs it (SigV4) or sends a
 * bearer token, the console sends the signed-in caller's token. Every answer that is not a
 * success throws one `ApiError`, as does a request that never reached the API (status 0). Runs
 * in browsers and on Node: nothing here touches the DOM or Node's modules.
 */
import type { Hono, Schema } from 'hono';
import { type InferRequestType, hc, parseResponse } from 'hono/client';
import type { ApiApp, ApiEnv } from './app.js';

/** One bad field of a refused request. */
export interface ApiIssue {
  path: string;
  message: string;
}

/**
 * An error answer of the API (`{ error: { code, message, issues? } }`), an answer that is not the
 * API's (a proxy's, a gateway's: code `Http<status>`), or a request that did not reach it
 * (status 0, code `Unreachable`).
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues: ApiIssue[] = [],
  ) {
    super(message);
  }

  /** The message with each bad field after it, on one line: `The body is invalid. (goal: must not be empty)`. */
  get detail(): string {
    const issues = this.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    return issues ? `${this.message} (${issues})` : this.message;
  }
}

/** Reads an error answer; bodies that are not the API's keep their status, and their text (or a `message` field) as the message. */
export async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; issues?: unknown }; message?: unknown };
    if (body.error && typeof body.error.code === 'string') {
      const issues = Array.isArray(body.error.issues) ? (body.error.issues as ApiIssue[]) : [];
      return new ApiError(res.status, body.error.code, String(body.error.message ?? body.error.code), issues);
    }
    if (typeof body.message === 'string') return new ApiError(res.status, `Http${res.status}`, body.message);
  } catch {
    // Not JSON: the text says what it says.
  }
  return new ApiError(res.status, `Http${res.status}`, text.slice(0, 200) || res.statusText || `The API answered ${res.status}.`);
}

/** How requests travel. */
export interface ApiClientOptions {
  /** The API's origin (and prefix); `''` for the page's own origin. */
  base: string;
  /** Sends a request: the global `fetch` by default; the CLI's signs it. */
  fetch?: (...args: Parameters<typeof fetch>) => Promise<Response>;
  /** Headers every request carries (the caller's token), read before each request. */
  headers?: () => Record<string, string> | Promise<Record<string, string>>;
  /** Called when the API refuses the caller (401), before the error is thrown. */
  onUnauthenticated?: () => void;
  /** The message of a request that did not reach the API. @default `cannot reach <base> (<cause>)` */
  unreachable?: (cause: unknown) => string;
}

/**
 * A path segment as the routes take it: escaped, so that any id names itself and nothing else
 * (`hc` puts parameters in the path as they are). Empty, it would name no segment and so another
 * route; it is refused here, as a rejected request (the methods are async).
 */
function segment(name: string, value: string): string {
  if (value === '') throw new ApiError(0, 'ValidationFailed', `The ${name} is empty.`, [{ path: name, message: 'must not be empty' }]);
  return encodeURIComponent(value);
}

/** `hc`'s options: every request carries the headers, and every answer that is not a success throws `ApiError`. */
function requestOptions(options: ApiClientOptions) {
  const send = options.fetch ?? ((...args: Parameters<typeof fetch>) => fetch(...args));
  const unreachable = options.unreachable ?? ((cause: unknown) => `cannot reach ${options.base} (${cause instanceof Error ? cause.message : String(cause)})`);
  return {
    headers: async () => (options.headers ? options.headers() : {}),
    fetch: async (...[input, init]: Parameters<typeof fetch>): Promise<Response> => {
      let res: Response;
      try {
        res = await send(input, init);
      } catch (error) {
        // fetch fails to reach a server with a TypeError, on Node and in browsers alike; anything
        // else (an abort, the CLI's credentials failing to load) is not about reaching it.
        if (init?.signal?.aborted || !(error instanceof TypeError)) throw error;
        throw new ApiError(0, 'Unreachable', unreachable(error));
      }
      if (res.ok) return res;
      if (res.status === 401) options.onUnauthenticated?.();
      throw await errorOf(res);
    },
  };
}

/** The client: one method per route, each answering the route's success body (or its response, to read as it arrives) or throwing `ApiError`. */
export function apiClient(options: ApiClientOptions) {
  const api = hc<ApiApp>(options.base, requestOptions(options));
  const run = (runId: string) => ({ runId: segment('runId', runId) });
  const key = (idempotencyKey: string | undefined) => (idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey });
  const one = api.runs[':runId'];

  return {
    /** `POST /runs`: starts a run. */
    startRun: async (body: InferRequestType<typeof api.runs.$post>['json'], idempotencyKey?: string) =>
      parseResponse(api.runs.$post({ json: body, header: key(idempotencyKey) })),
    /** `GET /runs`: a page of the caller's runs (or its tenant's). */
    listRuns: async (query: InferRequestType<typeof api.runs.$get>['query'] = {}) => parseResponse(api.runs.$get({ query })),
    /** `GET /runs/{runId}`: a run, with the calls waiting for a reviewer and the decisions made. */
    getRun: async (runId: string) => parseResponse(one.$get({ param: run(runId) })),
    /** `POST /runs/{runId}/cancel`, typed as JSON: the local server takes no state change that is not (a cross-site form cannot send one). */
    cancelRun: async (runId: string) => parseResponse(one.cancel.$post({ param: run(runId) }, { headers: { 'content-type': 'application/json' } })),
    /** `POST /runs/{runId}/fork`: a new single-mode run from one of the run's user messages. */
    forkRun: async (runId: string, body: InferRequestType<typeof one.fork.$post>['json'], idempotencyKey?: string) =>
      parseResponse(one.fork.$post({ param: run(runId), json: body, header: key(idempotencyKey) })),
    /** `POST /runs/{runId}/approvals/{toolUseId}`: a reviewer's decision. */
    decide: async (runId: string, toolUseId: string, body: InferRequestType<(typeof one.approvals)[':toolUseId']['$post']>['json']) =>
      parseResponse(one.approvals[':toolUseId'].$post({ param: { ...run(runId), toolUseId: segment('toolUseId', toolUseId) }, json: body })),
    /** `GET /runs/{runId}/messages`: one page of the run's transcript. */
    messages: async (runId: string, query: InferRequestType<typeof one.messages.$get>['query'] = {}) =>
      parseResponse(one.messages.$get({ param: run(runId), query })),
    /** `GET /runs/{runId}/files`: the run's workspace files. */
    files: async (runId: string) => parseResponse(one.files.$get({ param: run(runId) })),
    /** `GET /runs/{runId}/files/{path}`: one file, its answer to read as the caller needs (text, bytes). */
    file: async (runId: string, path: string) =>
      one.files[':path{.+}'].$get({ param: { ...run(runId), path: path.split('/').map(encodeURIComponent).join('/') } }),
    /** `GET /runs/{runId}/events`: the run's event stream after `after` (from its start without), to read as it arrives. */
    events: async (runId: string, { after, signal }: { after?: string | undefined; signal?: AbortSignal | undefined } = {}) =>
      one.events.$get(
        { param: run(runId), query: {}, header: after ? { 'Last-Event-ID': after } : {} },
        { headers: { accept: 'text/event-stream' }, ...(signal ? { init: { signal } } : {}) },
      ),
    /** `GET /runs/{runId}/events/page`: the run's events after `after`, as far as they are stored (the stream's events and ids). */
    eventsPage: async (runId: string, after?: string) => parseResponse(one.events.page.$get({ param: run(runId), query: after ? { after } : {} })),
    /** `GET /memories`: the caller's memory files of a scope. */
    memories: async (query: InferRequestType<typeof api.memories.$get>['query'] = {}) => parseResponse(api.memories.$get({ query })),
    /** `GET /memories/{path}`: one memory file's text. */
    memory: async (path: string, query: InferRequestType<typeof api.memories.$get>['query'] = {}) =>
      (await api.memories[':path{.+}'].$get({ param: { path: memoryParam(path) }, query })).text(),
    /** `DELETE /memories/{path}`: deletes one memory file. */
    deleteMemory: async (path: string, query: InferRequestType<typeof api.memories.$get>['query'] = {}) => {
      await api.memories[':path{.+}'].$delete({ param: { path: memoryParam(path) }, query }, { headers: { 'content-type': 'application/json' } });
    },
    /** `GET /evals`: the caller's deployed evals, newest first; `GET /evals/{evalId}`: one, with its report once done. */
    listEvals: async () => parseResponse(api.evals.$get({ query: {} })),
    getEval: async (evalId: string) => parseResponse(api.evals[':evalId'].$get({ param: { evalId } })),
    /** `GET /agents`: the deployment's agents and workflows, each with its version. */
    agents: async () => parseResponse(api.agents.$get()),
    /** `POST /schedules`: a schedule that starts a run on a cron or rate expression (docs/schedules.md). */
    createSchedule: async (body: InferRequestType<typeof api.schedules.$post>['json']) => parseResponse(api.schedules.$post({ json: body })),
    /** `GET /schedules`: the caller's schedules (or, for admins, its tenant's). */
    listSchedules: async (query: InferRequestType<typeof api.schedules.$get>['query'] = {}) => parseResponse(api.schedules.$get({ query })),
    /** `GET /schedules/{scheduleId}`. */
    getSchedule: async (scheduleId: string) => parseResponse(api.schedules[':scheduleId'].$get({ param: { scheduleId: segment('scheduleId', scheduleId) } })),
    /** `POST /schedules/{scheduleId}/pause` or `/resume`, typed as JSON as every state change. */
    setScheduleState: async (scheduleId: string, action: 'pause' | 'resume') =>
      parseResponse(api.schedules[':scheduleId'][action].$post({ param: { scheduleId: segment('scheduleId', scheduleId) } }, { headers: { 'content-type': 'application/json' } })),
    /** `DELETE /schedules/{scheduleId}`. */
    deleteSchedule: async (scheduleId: string): Promise<void> => {
      await parseResponse(api.schedules[':scheduleId'].$delete({ param: { scheduleId: segment('scheduleId', scheduleId) } }, { headers: { 'content-type': 'application/json' } }));
    },
    /** `GET /openapi.json`: the API's OpenAPI document (its route declares no schema of it). */
    document: async (): Promise<unknown> => parseResponse(api['openapi.json'].$get()),
  };
}

/** The client's methods. */
export type ApiClient = ReturnType<typeof apiClient>;

/**
 * A typed client of other routes (the local server's own, `local/routes.ts`), with the same
 * transport and errors; read an answer with `parseResponse`.
 */
export function routesClient<App extends Hono<ApiEnv, Schema, '/'>>(options: ApiClientOptions) {
  return hc<App>(options.base, requestOptions(options));
}

export { parseResponse };

/** A memory path as the route takes it: under /memories (`/memories/notes.md` and `notes.md` name one file), each segment encoded. */
function memoryParam(path: string): string {
  return path.replace(/^\/?memories\//, '').split('/').map(encodeURIComponent).join('/');
}
