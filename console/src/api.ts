/**
 * The console's client of the Stepwise HTTP API, on the page's own origin. Every request carries
 * the signed-in caller's token (none for the local caller); an error answer becomes an `ApiError`
 * with the API's code, message and issues. No DOM: the unit tests run it on Node.
 */

/** An error answer of the API (`{ error: { code, message, issues? } }`), or a failed request (status 0). */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues: { path: string; message: string }[] = [],
  ) {
    super(message);
  }
}

/** Reads an error answer; bodies that are not the API's (a proxy's, a gateway's) keep their status. */
export async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; issues?: unknown }; message?: unknown };
    if (body.error && typeof body.error.code === 'string') {
      const issues = Array.isArray(body.error.issues) ? (body.error.issues as { path: string; message: string }[]) : [];
      return new ApiError(res.status, body.error.code, String(body.error.message ?? body.error.code), issues);
    }
    if (typeof body.message === 'string') return new ApiError(res.status, `Http${res.status}`, body.message);
  } catch {
    // Not JSON: the status says enough.
  }
  return new ApiError(res.status, `Http${res.status}`, text.slice(0, 200) || `The API answered ${res.status}.`);
}

export interface ApiClientOptions {
  /** The Authorization header of the current caller, if any. */
  authorization: () => string | undefined | Promise<string | undefined>;
  /** Called when the API refuses the caller's token (401): the console asks to sign in again. */
  onUnauthenticated?: () => void;
  /** The origin and prefix of the API; the page's own origin by default. */
  base?: string;
  fetch?: typeof fetch;
}

export interface ApiClient {
  /** A request whose answer is JSON; error answers throw `ApiError`. */
  json<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T>;
  /** A request whose answer is read by the caller (files, the event stream); error answers throw `ApiError`. */
  open(path: string, init?: { headers?: Record<string, string>; signal?: AbortSignal }): Promise<Response>;
  /** The headers every request carries (the caller's token). */
  headers(): Promise<Record<string, string>>;
}

export function apiClient(options: ApiClientOptions): ApiClient {
  const base = options.base ?? '';
  const doFetch: typeof fetch = options.fetch ?? fetch.bind(globalThis);
  const headers = async (): Promise<Record<string, string>> => {
    const authorization = await options.authorization();
    return authorization ? { authorization } : {};
  };
  const send = async (path: string, init: RequestInit): Promise<Response> => {
    let res: Response;
    try {
      res = await doFetch(`${base}${path}`, init);
    } catch (error) {
      if (init.signal?.aborted) throw error;
      throw new ApiError(0, 'Unreachable', 'The API could not be reached. Check the connection and try again.');
    }
    if (res.ok) return res;
    const error = await errorOf(res);
    if (res.status === 401) options.onUnauthenticated?.();
    throw error;
  };
  return {
    headers,
    async json<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
      const res = await send(path, {
        method,
        headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(await headers()) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return (text ? JSON.parse(text) : {}) as T;
    },
    async open(path, init = {}) {
      return send(path, { headers: { ...(await headers()), ...init.headers }, ...(init.signal ? { signal: init.signal } : {}) });
    },
  };
}

/** The path of a run's route: `/runs/<id><rest>`, the id escaped. */
export function runPath(runId: string, rest = ''): string {
  return `/runs/${encodeURIComponent(runId)}${rest}`;
}

/** The path of a workspace file: each segment escaped, the slashes kept. */
export function filePath(runId: string, path: string): string {
  return runPath(runId, `/files/${path.split('/').map(encodeURIComponent).join('/')}`);
}
