/**
 * Who is calling the HTTP API, read once per request (docs/ARCHITECTURE.md, "Callers and
 * owners"). Deployed, API Gateway has already checked the credentials: IAM auth leaves the
 * caller's ARN on the request context, JWT auth the token's claims. The local server checks its
 * own issuer's tokens, and reads their claims through the same `callerFromClaims`.
 */
import * as z from 'zod';
import { type Caller, type ClaimSettings, type IamSettings, Unauthenticated, callerFromClaims, callerFromIam } from '../core/callers.js';

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

/** IAM auth: the signed caller's ARN, with the roles the deployment's ARN patterns give it. */
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
      throw new Unauthenticated(`The token is not valid here (${error instanceof Error ? error.message : String(error)}).`);
    }
    return callerFromClaims(claims, settings);
  };
}
