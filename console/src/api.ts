/**
 * The console's client of the Stepwise HTTP API, on the page's own origin: the shared client
 * (functions/api/client.ts) with the signed-in caller's token on every request (none for the
 * local caller), and a refused token (401) sending the page to sign in again. No DOM: the unit
 * tests run it on Node.
 */
import { type ApiClient, apiClient as sharedClient } from '../../functions/api/client.js';

export { ApiError, type ApiClient } from '../../functions/api/client.js';

export interface ApiClientOptions {
  /** The Authorization header of the current caller, if any. */
  authorization: () => string | undefined | Promise<string | undefined>;
  /** Called when the API refuses the caller's token (401): the console asks to sign in again. */
  onUnauthenticated?: () => void;
  /** The origin and prefix of the API; the page's own origin by default. */
  base?: string;
  fetch?: typeof fetch;
}

/** The API client of the console's pages. */
export function apiClient(options: ApiClientOptions): ApiClient {
  return sharedClient({
    base: options.base ?? '',
    ...(options.fetch ? { fetch: options.fetch } : {}),
    headers: async (): Promise<Record<string, string>> => {
      const authorization = await options.authorization();
      return authorization ? { authorization } : {};
    },
    ...(options.onUnauthenticated ? { onUnauthenticated: options.onUnauthenticated } : {}),
    unreachable: () => 'The API could not be reached. Check the connection and try again.',
  });
}
