/**
 * The CLI's HTTP client: plain fetch against the local server, SigV4-signed requests (the
 * standard AWS credential chain) against a deployed API with IAM auth.
 */
/** An error answer of the API, shown as one line. */
export class ApiFailure extends Error {
  override readonly name = 'ApiFailure';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ClientOptions {
  endpoint: string;
  region?: string;
  /** Sign requests with SigV4; default: sign unless the endpoint is on loopback or a token is given. */
  sign?: boolean;
  /** A bearer token (JWT mode, or the local issuer's): sent as `Authorization: Bearer …` instead of signing. */
  token?: string;
  /** The AWS service SigV4 signs for: `execute-api` (the HTTP API), `lambda` (the stream's function URL). @default 'execute-api' */
  service?: string;
}

export type Fetch = (url: string, init?: RequestInit) => Promise<Response>;

/** The local server as `npm run dev` serves it: `http://127.0.0.1:$PORT`, PORT defaulting to 8787. */
export function localEndpoint(port = process.env.PORT): string {
  if (port === undefined || port === '') return 'http://127.0.0.1:8787';
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65_535) {
    throw new Error(`PORT must be a port number (1 to 65535), not "${port}"; or set STEPWISE_ENDPOINT to the API's URL.`);
  }
  return `http://127.0.0.1:${Number(port)}`;
}

/** Whether an endpoint (the flag or STEPWISE_ENDPOINT) is an http(s) URL. */
export function isHttpUrl(value: string): boolean {
  return URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol);
}

/** The API path of a run, its id escaped so that any id names that run. */
export function runPath(runId: string, rest = ''): string {
  return `/runs/${encodeURIComponent(runId)}${rest}`;
}

export function isLoopback(endpoint: string): boolean {
  const host = new URL(endpoint).hostname;
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}

export class StepwiseClient {
  private readonly base: string;
  private fetcher: Fetch | undefined;

  constructor(private readonly options: ClientOptions) {
    this.base = options.endpoint.replace(/\/+$/, '');
  }

  private async fetchFn(): Promise<Fetch> {
    if (this.fetcher) return this.fetcher;
    const sign = this.options.sign ?? (this.options.token === undefined && !isLoopback(this.options.endpoint));
    if (!sign) return (this.fetcher = (url, init) => fetch(url, init));
    // Loaded only to sign: a command against the local server starts without them.
    const [{ fromNodeProviderChain }, { AwsClient }] = await Promise.all([import('@aws-sdk/credential-providers'), import('aws4fetch')]);
    const credentials = await fromNodeProviderChain()();
    const aws = new AwsClient({
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      ...(credentials.sessionToken ? { sessionToken: credentials.sessionToken } : {}),
      service: this.options.service ?? 'execute-api',
      ...(this.options.region ? { region: this.options.region } : {}),
    });
    return (this.fetcher = (url, init) => aws.fetch(url, init));
  }

  /** Calls the API and returns the answer; an error answer throws `ApiFailure`. */
  async call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const res = await this.send(method, path, body, headers);
    const text = await res.text();
    const type = res.headers.get('content-type') ?? '';
    return (type.includes('application/json') ? JSON.parse(text) : text) as T;
  }

  /**
   * Opens a response to read as it arrives (the event stream); an error answer throws
   * `ApiFailure`, an unreachable server `ApiFailure` with status 0.
   */
  open(path: string, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
    return this.send('GET', path, undefined, { accept: 'text/event-stream', ...headers }, signal);
  }

  private async send(method: string, path: string, body: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
    const fetchFn = await this.fetchFn();
    let res: Response;
    try {
      res = await fetchFn(`${this.base}${path}`, {
        method,
        headers: {
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
          ...headers,
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      const hint = isLoopback(this.base) ? '; is "npm run dev" running on that port?' : '';
      throw new ApiFailure(0, 'Unreachable', `cannot reach ${this.base} (${error instanceof Error ? error.message : String(error)})${hint}`);
    }
    if (!res.ok) throw failureOf(res.status, res.statusText, await res.text());
    return res;
  }
}

/** An error answer as one `ApiFailure`: the API's `{ error: { code, message, issues } }`, else the text. */
function failureOf(status: number, statusText: string, text: string): ApiFailure {
  let code = `HTTP${status}`;
  let message = text || statusText;
  try {
    const parsed = JSON.parse(text) as { error?: { code: string; message: string; issues?: { path: string; message: string }[] }; message?: string };
    if (parsed.error) {
      code = parsed.error.code;
      message = parsed.error.message + (parsed.error.issues?.length ? ` (${parsed.error.issues.map((i) => `${i.path}: ${i.message}`).join('; ')})` : '');
    } else if (parsed.message) message = parsed.message;
  } catch {
    // not JSON: keep the text
  }
  return new ApiFailure(status, code, message);
}
