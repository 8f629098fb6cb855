/**
 * How the CLI reaches the API: the shared client (functions/api/client.ts) over plain fetch
 * against the local server, SigV4-signed requests (the standard AWS credential chain) against a
 * deployed API with IAM auth, or a bearer token.
 */
import { type ApiClient, type ApiClientOptions, apiClient, parseResponse, routesClient } from '../../functions/api/client.js';
import type { TokenRequest } from '../../functions/core/callers/types.js';
import type { LocalTokenRoutes } from '../../local/routes.js';

export { ApiError } from '../../functions/api/client.js';

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

type Fetch = NonNullable<ApiClientOptions['fetch']>;

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

/** Whether an endpoint is on this machine (the local server): its requests are not signed. */
export function isLoopback(endpoint: string): boolean {
  const host = new URL(endpoint).hostname;
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}

/** How the CLI's requests travel to `options.endpoint`. */
function transport(options: ClientOptions): ApiClientOptions {
  const base = options.endpoint.replace(/\/+$/, '');
  const sign = options.sign ?? (options.token === undefined && !isLoopback(options.endpoint));
  const token = options.token;
  return {
    base,
    ...(sign ? { fetch: signed(options) } : {}),
    ...(token ? { headers: () => ({ authorization: `Bearer ${token}` }) } : {}),
    unreachable: (cause) =>
      `cannot reach ${base} (${cause instanceof Error ? cause.message : String(cause)})${isLoopback(base) ? '; is "npm run dev" running on that port?' : ''}`,
  };
}

/** A fetch that signs each request with SigV4, the signer and credentials loaded on first use. */
function signed(options: ClientOptions): Fetch {
  let signer: Promise<Fetch> | undefined;
  const load = async (): Promise<Fetch> => {
    // Loaded only to sign: a command against the local server starts without them.
    const [{ fromNodeProviderChain }, { AwsClient }] = await Promise.all([import('@aws-sdk/credential-providers'), import('aws4fetch')]);
    const credentials = await fromNodeProviderChain()();
    const aws = new AwsClient({
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      ...(credentials.sessionToken ? { sessionToken: credentials.sessionToken } : {}),
      service: options.service ?? 'execute-api',
      ...(options.region ? { region: options.region } : {}),
    });
    return (input, init) => aws.fetch(input, init);
  };
  return async (input, init) => {
    // A failed load is tried again by the next request.
    signer ??= load().catch((error: unknown) => {
      signer = undefined;
      throw error;
    });
    return (await signer)(input, init);
  };
}

/** The API client of a command. */
export function cliClient(options: ClientOptions): ApiClient {
  return apiClient(transport(options));
}

/** Asks the local server's issuer for a token (`POST /_local/tokens`, `npm run dev` only). */
export function localToken(options: ClientOptions, request: TokenRequest): Promise<{ token: string }> {
  return parseResponse(routesClient<LocalTokenRoutes>(transport(options))._local.tokens.$post({ json: request }));
}
