/**
 * Who is calling the HTTP API, read once per request (docs/callers-and-security.md, "Callers and
 * owners"). Deployed, API Gateway has already checked the credentials: IAM auth leaves the caller's
 * ARN on the request context, JWT auth the token's claims. The stream function's URL (payload 2.0,
 * like the HTTP API's) leaves the same IAM context; it has no JWT authorizer, so in JWT mode the
 * function checks the token itself (`jwtVerifier`). The local server checks its own issuer's
 * tokens. Every path reads claims through the same `callerFromClaims`.
 */
import { type JWTPayload, type JWTVerifyGetKey, createRemoteJWKSet, errors, jwtVerify } from 'jose';
import * as z from 'zod';
import { type Caller, type ClaimSettings, type IamSettings, Unauthenticated } from '../core/callers/types.js';
import { callerFromClaims, callerFromIam } from '../core/callers/claims.js';
import { named } from '../core/errors/errors.js';

/** What a request offers to identify its caller. */
export interface CallerRequest {
  /** The `Authorization` header. */
  authorization?: string | undefined;
  /** The API Gateway event, when the request came through API Gateway. */
  lambdaEvent?: unknown;
}

/** Reads the caller of a request, or throws `Unauthenticated`. */
export type Authenticate = (request: CallerRequest) => Promise<Caller>;

const IamContext = z.object({
  requestContext: z.object({ authorizer: z.object({ iam: z.object({ userArn: z.string().min(1) }) }) }),
});

/**
 * IAM auth: the signed caller's ARN, with the roles the deployment's ARN patterns give it. API
 * Gateway's HTTP API and a Lambda function URL in `AWS_IAM` mode both pass it as
 * `requestContext.authorizer.iam.userArn`.
 */
export function iamCallers(settings: IamSettings): Authenticate {
  return async ({ lambdaEvent }) => {
    const context = IamContext.safeParse(lambdaEvent);
    if (!context.success) throw new Unauthenticated('The request carries no IAM identity.');
    return callerFromIam(context.data.requestContext.authorizer.iam.userArn, settings);
  };
}

const JwtContext = z.object({
  requestContext: z.object({ authorizer: z.object({ jwt: z.object({ claims: z.record(z.string(), z.unknown()) }) }) }),
});

/** JWT auth behind API Gateway's JWT authorizer: the claims it verified. */
export function jwtClaimCallers(settings: ClaimSettings): Authenticate {
  return async ({ lambdaEvent }) => {
    const context = JwtContext.safeParse(lambdaEvent);
    if (!context.success) throw new Unauthenticated('The request carries no verified token claims.');
    return callerFromClaims(gatewayClaims(context.data.requestContext.authorizer.jwt.claims), settings);
  };
}

/**
 * Claims as API Gateway passes them: every value a string, a list written as `[a b]`. Lists are
 * turned back into lists, so `scp` reads the same as from the token itself.
 */
function gatewayClaims(claims: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(claims).map(([name, value]) => {
      const list = typeof value === 'string' ? /^\[(.*)\]$/s.exec(value) : null;
      return [name, list ? (list[1] ?? '').split(' ').filter(Boolean) : value];
    }),
  );
}

/**
 * Bearer tokens checked here (the local server): `verify` returns the claims of a valid token
 * and throws otherwise. A request without the header is `anonymous`, when given.
 */
export function bearerCallers(
  verify: (token: string) => Promise<Record<string, unknown>>,
  settings: ClaimSettings,
  anonymous?: Caller,
): Authenticate {
  return async ({ authorization }) => {
    if (authorization === undefined) {
      if (anonymous) return anonymous;
      throw new Unauthenticated('Send a token: "Authorization: Bearer <token>".');
    }
    const token = /^Bearer ([A-Za-z0-9._~+/=-]+)$/.exec(authorization)?.[1];
    if (!token) throw new Unauthenticated('The Authorization header must be "Bearer <token>".');
    let claims: Record<string, unknown>;
    try {
      claims = await verify(token);
    } catch (error) {
      // The issuer out of reach is not the caller's fault: a 500, not a 401.
      if (error instanceof IssuerUnavailable) throw error;
      throw new Unauthenticated(`The token is not valid here (${error instanceof Error ? error.message : String(error)}).`);
    }
    return callerFromClaims(claims, settings);
  };
}

/** A JWT issuer whose tokens the stream function checks itself (JWT mode): the HTTP API authorizer's settings. */
export interface JwtIssuer {
  /** The `iss` a token must carry. */
  issuer: string;
  /** The audiences a token may be for, in `aud` (or `client_id` when it has no `aud`). */
  audience: readonly string[];
  /** The issuer's key set. @default the `jwks_uri` of `<issuer>/.well-known/openid-configuration` */
  jwksUrl?: string;
}

/** API Gateway's JWT authorizer verifies RSA signatures only; so does `jwtVerifier`. */
export const jwtAlgorithms = ['RS256', 'RS384', 'RS512'];

/**
 * Checks a JWT as the HTTP API's JWT authorizer does: a `kid` naming a key of the issuer's key
 * set, an RSA signature by it, `iss` the issuer, `aud` one of the audiences (`client_id` when the
 * token has no `aud`), `exp` ahead and `nbf` behind. Returns the claims; throws for any token that fails, and
 * `IssuerUnavailable` when the issuer's keys cannot be had. `keys` replaces the issuer's key set
 * (tests).
 */
export function jwtVerifier(settings: JwtIssuer, keys: JWTVerifyGetKey = issuerKeys(settings)): (token: string) => Promise<JWTPayload> {
  const withKid: JWTVerifyGetKey = (header, token) => {
    if (typeof header.kid !== 'string') throw new errors.JWSInvalid('The token names no key (kid).');
    return keys(header, token);
  };
  return async (token) => {
    const { payload } = await jwtVerify(token, withKid, { issuer: settings.issuer, algorithms: jwtAlgorithms, requiredClaims: ['exp'] });
    // API Gateway's rule: `aud` decides when the token has one; `client_id` only when it has none
    // (access tokens of Amazon Cognito), so a wrong `aud` is never saved by a right `client_id`.
    const audiences = payload.aud !== undefined ? [payload.aud].flat() : [payload.client_id];
    if (!audiences.some((value) => typeof value === 'string' && settings.audience.includes(value))) {
      throw new errors.JWTClaimValidationFailed('its audience (aud or client_id) is not this API\'s', payload, 'aud', 'check_failed');
    }
    return payload;
  };
}

/** The issuer's keys could not be had (its configuration or key set did not answer, or not as expected). */
export class IssuerUnavailable extends named('IssuerUnavailable') {}

const OpenIdConfiguration = z.object({ jwks_uri: z.string().url() });

/** Failures of a key look-up that are the token's, not the issuer's. */
const tokenFaults = [errors.JWKSNoMatchingKey, errors.JWKSMultipleMatchingKeys, errors.JOSENotSupported, errors.JWSInvalid];

/**
 * The issuer's key set, found on first use (once per container, a failed look-up tried again on
 * the next request) and cached by `jose` between requests, refetched when a token names a key it
 * does not hold yet.
 */
function issuerKeys({ issuer, jwksUrl }: JwtIssuer): JWTVerifyGetKey {
  let keys: Promise<JWTVerifyGetKey> | undefined;
  const load = async () => createRemoteJWKSet(new URL(jwksUrl ?? (await discoverKeySet(issuer))));
  return async (header, token) => {
    keys ??= load().catch((error: unknown) => {
      keys = undefined;
      throw error;
    });
    try {
      return await (await keys)(header, token);
    } catch (error) {
      if (error instanceof IssuerUnavailable || tokenFaults.some((fault) => error instanceof fault)) throw error;
      throw new IssuerUnavailable(`The key set of ${issuer} could not be read.`, { cause: error });
    }
  };
}

/** The `jwks_uri` of the issuer's OpenID configuration, as API Gateway finds it. */
async function discoverKeySet(issuer: string): Promise<string> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) throw new Error(`it answered ${response.status}`);
    return OpenIdConfiguration.parse(await response.json()).jwks_uri;
  } catch (error) {
    throw new IssuerUnavailable(`The OpenID configuration of ${issuer} could not be read (${url}).`, { cause: error });
  }
}
