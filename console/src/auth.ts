/**
 * Who the console calls the API as (docs/console.md, "Sign-in"). Locally: the caller
 * `local` (no token, as the API treats a request without one), or a caller of the local issuer
 * (`POST /_local/tokens`, as `stepwise token` does). Deployed with JWT auth: the user signed in at
 * the OpenID provider, by authorization code with PKCE through `oauth4webapi` (loaded only then).
 * The token lives in this tab's sessionStorage: closing the tab signs out, and two tabs may be two
 * callers. With IAM auth the console cannot call the API (a browser has no SigV4 credentials).
 */
import type { ConsoleConfig, OidcConfig } from './config.js';

export interface Caller {
  /** What the page shows: the subject, or `local`. */
  name: string;
  tenant?: string;
  /** `approve`, `admin` (without the `stepwise/` prefix). */
  scopes: string[];
  /** The local caller, without a token. */
  anonymous: boolean;
}

interface Stored {
  token: string;
  /** Seconds since the epoch. */
  expiresAt?: number;
}

const tokenKey = 'stepwise.console.token';
const pendingKey = 'stepwise.console.oidc';
export const callbackPath = '/console/callback';

export interface Auth {
  readonly config: ConsoleConfig;
  /** The Authorization header, if a caller signed in. */
  authorization(): string | undefined;
  /** The current caller; undefined when the console needs a sign-in first. */
  caller(): Caller | undefined;
  /** Locally: become a caller of the local issuer. */
  signInLocal(request: { sub: string; tenant?: string; scopes: string[] }): Promise<void>;
  /** Forgets the token: locally the caller is `local` again; deployed, signed out. */
  signOut(): void;
  /** Deployed: sends the browser to the OpenID provider. */
  signInOidc(returnTo: string): Promise<void>;
  /** On the callback path: trades the code for a token; answers where to go next. */
  completeOidc(): Promise<string>;
  subscribe(listener: () => void): () => void;
}

export function createAuth(config: ConsoleConfig): Auth {
  const listeners = new Set<() => void>();
  const changed = () => listeners.forEach((listener) => listener());
  const read = (): Stored | undefined => {
    try {
      const stored = JSON.parse(sessionStorage.getItem(tokenKey) ?? 'null') as Stored | null;
      if (!stored || (stored.expiresAt !== undefined && stored.expiresAt * 1000 <= Date.now())) return undefined;
      return stored;
    } catch {
      return undefined;
    }
  };
  const store = (stored: Stored | undefined) => {
    if (stored) sessionStorage.setItem(tokenKey, JSON.stringify(stored));
    else sessionStorage.removeItem(tokenKey);
    changed();
  };

  return {
    config,
    authorization: () => {
      const stored = read();
      return stored ? `Bearer ${stored.token}` : undefined;
    },
    caller() {
      const stored = read();
      if (stored) return callerOf(stored.token);
      if (config.auth === 'local') return { name: 'local', scopes: ['approve'], anonymous: true };
      return undefined;
    },
    async signInLocal(request) {
      const res = await fetch('/_local/tokens', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sub: request.sub, ...(request.tenant ? { tenant: request.tenant } : {}), scopes: request.scopes }),
      });
      const body = (await res.json().catch(() => ({}))) as { token?: string; error?: { message?: string } };
      if (!res.ok || !body.token) throw new Error(body.error?.message ?? `The local issuer answered ${res.status}.`);
      const exp = claimsOf(body.token).exp;
      store({ token: body.token, ...(typeof exp === 'number' ? { expiresAt: exp } : {}) });
    },
    signOut() {
      store(undefined);
      if (config.auth === 'oidc' && config.oidc?.logoutEndpoint) {
        const url = new URL(config.oidc.logoutEndpoint);
        url.searchParams.set('client_id', config.oidc.clientId);
        url.searchParams.set('logout_uri', `${location.origin}/console/`);
        location.assign(url.href);
      }
    },
    async signInOidc(returnTo) {
      const oidc = requireOidc(config);
      const oauth = await import('oauth4webapi');
      const server = await authorizationServer(oidc);
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      sessionStorage.setItem(pendingKey, JSON.stringify({ verifier, state, returnTo }));
      const url = new URL(String(server.authorization_endpoint));
      url.searchParams.set('client_id', oidc.clientId);
      url.searchParams.set('redirect_uri', `${location.origin}${callbackPath}`);
      url.searchParams.set('response_type', 'code');
      url.searchParams.set('scope', oidc.scope);
      url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
      url.searchParams.set('code_challenge_method', 'S256');
      url.searchParams.set('state', state);
      location.assign(url.href);
    },
    async completeOidc() {
      const oidc = requireOidc(config);
      const pending = JSON.parse(sessionStorage.getItem(pendingKey) ?? 'null') as { verifier: string; state: string; returnTo: string } | null;
      sessionStorage.removeItem(pendingKey);
      if (!pending) throw new Error('No sign-in was under way in this tab; sign in again.');
      const oauth = await import('oauth4webapi');
      const server = await authorizationServer(oidc);
      const client = { client_id: oidc.clientId };
      const params = oauth.validateAuthResponse(server, client, new URL(location.href), pending.state);
      const response = await oauth.authorizationCodeGrantRequest(server, client, oauth.None(), params, `${location.origin}${callbackPath}`, pending.verifier, {
        [oauth.allowInsecureRequests]: onLoopback(String(server.token_endpoint)),
      });
      const result = await oauth.processAuthorizationCodeResponse(server, client, response);
      const expiresIn = typeof result.expires_in === 'number' ? result.expires_in : undefined;
      store({ token: result.access_token, ...(expiresIn ? { expiresAt: Math.floor(Date.now() / 1000) + expiresIn } : {}) });
      return pending.returnTo.startsWith('/console/') ? pending.returnTo : '/console/';
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

function requireOidc(config: ConsoleConfig): OidcConfig {
  if (config.auth !== 'oidc' || !config.oidc) throw new Error('This console is not set up to sign in with OpenID Connect.');
  return config.oidc;
}

/** The provider's endpoints: as configured, else from its discovery document. */
async function authorizationServer(oidc: OidcConfig) {
  const oauth = await import('oauth4webapi');
  if (oidc.authorizationEndpoint && oidc.tokenEndpoint) {
    return { issuer: oidc.issuer, authorization_endpoint: oidc.authorizationEndpoint, token_endpoint: oidc.tokenEndpoint };
  }
  const issuer = new URL(oidc.issuer);
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', [oauth.allowInsecureRequests]: onLoopback(oidc.issuer) }));
}

/** Plain HTTP is allowed only to a provider on this machine (a local test or development provider). */
function onLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  return protocol === 'http:' && (hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]');
}

/** The claims of a JWT, read without verifying it (the API verifies; the page only shows who it is). */
export function claimsOf(token: string): Record<string, unknown> {
  try {
    const payload = token.split('.')[1] ?? '';
    const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(payload.length / 4) * 4, '='));
    const value = JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0)))) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The caller a token names: its subject (or user name), tenant and Stepwise scopes. */
export function callerOf(token: string): Caller {
  const claims = claimsOf(token);
  const scope = [claims.scope, claims.scp].flat().filter((s): s is string => typeof s === 'string').join(' ');
  const scopes = scope
    .split(/\s+/)
    .filter((s) => s.startsWith('stepwise/'))
    .map((s) => s.slice('stepwise/'.length));
  const name = [claims.username, claims['cognito:username'], claims.email, claims.sub].find((v): v is string => typeof v === 'string') ?? 'signed in';
  const tenant = typeof claims.tenant === 'string' ? claims.tenant : undefined;
  return { name, ...(tenant ? { tenant } : {}), scopes, anonymous: false };
}
