/** Wiring of the HTTP API and stream functions: the intake's parts, the stores they read, task tokens and their callers. */
import type { JWTVerifyGetKey } from 'jose';
import type { ApiDeps } from '../api/app.js';
import { type Authenticate, bearerCallers, iamCallers, jwtClaimCallers, jwtVerifier } from '../api/callers.js';
import type { ClaimSettings } from '../core/callers/types.js';
import { SfnTaskTokens } from '../adapters/aws/task-tokens.js';
import { presignedLinks } from '../adapters/s3/links.js';
import { evalRouteWiring } from './evals.js';
import { type IntakeHooks, intakeWiring, sfnClient } from './intake.js';
import { type Env, type Wiring, awsClients } from './wire.js';

/** The HTTP API's dependencies: one Step Functions client starts runs and answers task tokens. */
export function apiWiring(wiring: Wiring, hooks: IntakeHooks & Partial<Pick<ApiDeps, 'log' | 'authenticate'>> = {}): ApiDeps {
  const sfn = sfnClient(wiring.env);
  const evals = evalRouteWiring(wiring);
  return {
    ...intakeWiring(wiring, sfn, hooks),
    ...(evals ? { evals } : {}),
    ...(hooks.log ? { log: hooks.log } : {}),
    authenticate: hooks.authenticate ?? deployedCallers(wiring.env),
    access: { separateReviewer: wiring.env.STEPWISE_SEPARATE_REVIEWER },
    conversations: wiring.conversations,
    workspaceFor: wiring.workspaceFor,
    memoryFor: wiring.memoryFor,
    forks: wiring.forks,
    fileLinks: presignedLinks(awsClients(wiring.env).s3, wiring.env.STEPWISE_BUCKET),
    approvals: wiring.approvals,
    a2a: { auth: wiring.env.STEPWISE_AUTH, ...(wiring.env.STEPWISE_A2A_URL ? { url: wiring.env.STEPWISE_A2A_URL } : {}) },
    catalogs: wiring.catalogs,
    tokens: new SfnTaskTokens(sfn),
    events: wiring.events,
    maxSchedulesPerCaller: wiring.env.STEPWISE_MAX_SCHEDULES_PER_CALLER,
    streamSlots: wiring.streamSlots,
    maxStreamsPerCaller: wiring.env.STEPWISE_MAX_STREAMS_PER_CALLER,
    // Unset, a stream lasts the reader's default (14 minutes); the stack sets it on the stream function (docs/deploying.md, "The stream URL").
    ...(wiring.env.STEPWISE_STREAM_MAX_SECONDS ? { stream: { maxDurationMs: wiring.env.STEPWISE_STREAM_MAX_SECONDS * 1000 } } : {}),
  };
}

/** Callers as API Gateway identified them: by IAM signature, or by the claims of a verified JWT. */
function deployedCallers(env: Env): Authenticate {
  if (env.STEPWISE_AUTH === 'jwt') return jwtClaimCallers(claimSettings(env));
  return iamCallers({ identity: env.STEPWISE_IAM_IDENTITY, reviewerArns: env.STEPWISE_REVIEWER_ARNS, adminArns: env.STEPWISE_ADMIN_ARNS });
}

/**
 * Callers of the stream function's URL (docs/deploying.md, "The stream URL"): in IAM
 * mode as Lambda identified them, the same context as the HTTP API's; in JWT mode the URL is open
 * and the function verifies the bearer token itself, as the HTTP API's JWT authorizer does, with
 * the same issuer and audiences, and reads the same claims. `keys` replaces the issuer's key set (tests).
 */
export function streamCallers(env: Env, keys?: JWTVerifyGetKey): Authenticate {
  if (env.STEPWISE_AUTH !== 'jwt') return deployedCallers(env);
  const issuer = env.STEPWISE_JWT_ISSUER;
  if (!issuer) throw new Error('Stepwise is misconfigured: STEPWISE_JWT_ISSUER is not set (JWT mode verifies tokens in the stream function).');
  if (!env.STEPWISE_JWT_AUDIENCE.length) throw new Error('Stepwise is misconfigured: STEPWISE_JWT_AUDIENCE is not set (JWT mode verifies tokens in the stream function).');
  const verify = jwtVerifier({ issuer, audience: env.STEPWISE_JWT_AUDIENCE, ...(env.STEPWISE_JWKS_URL ? { jwksUrl: env.STEPWISE_JWKS_URL } : {}) }, keys);
  return bearerCallers(verify, claimSettings(env));
}

/** How JWT claims name a tenant, the same for both functions. */
function claimSettings(env: Env): ClaimSettings {
  return env.STEPWISE_TENANT_CLAIM ? { tenantClaim: env.STEPWISE_TENANT_CLAIM } : {};
}
