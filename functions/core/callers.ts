/**
 * Callers, owners and reviewers (docs/ARCHITECTURE.md, "Callers and owners"). Every request and
 * every event has a caller; every run has the owner that started it. Who may see, decide and
 * cancel what is decided here, and nowhere else, so the API's routes and the property test share
 * one rule.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { StepwiseError } from './errors.js';

/** What a caller may do besides working with its own runs. */
export const Scope = z.enum(['approve', 'admin']);
export type Scope = z.infer<typeof Scope>;

/** Who owns a run: the principal that started it, in its tenant (if the deployment has tenants). */
export const Owner = z
  .object({
    principal: z.string().min(1).max(2048),
    tenant: z.string().min(1).max(256).optional(),
  })
  .meta({ id: 'Owner', description: 'The caller that started the run, and its tenant.' });
export type Owner = z.infer<typeof Owner>;

/** Who is asking. */
export const Caller = Owner.extend({ scopes: z.array(Scope) });
export type Caller = z.infer<typeof Caller>;

/** The caller of the local server when a request carries no token: today's README examples work as before. */
export const localCaller: Caller = { principal: 'local', scopes: ['approve'] };

/** What a caller wants to do with a run. */
export type Access = 'read' | 'decide' | 'cancel';

/**
 * The answer: `hidden` (the run is answered as missing: 404), `forbidden` (the caller sees the
 * run but may not do this: 403), or `allowed`.
 */
export type Verdict = 'allowed' | 'hidden' | 'forbidden';

export interface AccessPolicy {
  /** The owner of a run may not decide its own approvals (a second person must). @default false */
  separateReviewer?: boolean;
}

/** Whether the caller holds a role: `admin` includes everything `approve` allows. */
export function holds(caller: Pick<Caller, 'scopes'>, scope: Scope): boolean {
  return caller.scopes.includes('admin') || caller.scopes.includes(scope);
}

/** Whether the caller is the run's owner: the same principal in the same tenant. */
export function owns(caller: Owner, owner: Owner | undefined): boolean {
  return owner !== undefined && owner.principal === caller.principal && owner.tenant === caller.tenant;
}

/**
 * Decides one access. The owner reads and cancels its run; a reviewer (`approve`) of the run's
 * tenant reads it and decides its approvals; an admin of that tenant also cancels it. Runs made
 * before runs had owners are seen by admins without a tenant only. Everyone else is answered as if
 * the run did not exist.
 */
export function accessTo(caller: Caller, owner: Owner | undefined, access: Access, policy: AccessPolicy = {}): Verdict {
  const own = owns(caller, owner);
  const sameTenant = owner?.tenant === caller.tenant;
  const sees = own || (sameTenant && holds(caller, owner === undefined ? 'admin' : 'approve'));
  if (!sees) return 'hidden';
  switch (access) {
    case 'read':
      return 'allowed';
    case 'cancel':
      return own || holds(caller, 'admin') ? 'allowed' : 'forbidden';
    case 'decide':
      if (!holds(caller, 'approve')) return 'forbidden';
      return own && policy.separateReviewer ? 'forbidden' : 'allowed';
  }
}

/**
 * A short, stable key for an owner, safe in DynamoDB keys and conversation ids: sessions,
 * idempotency keys and run listings are per owner, so one caller's `sessionId` never names
 * another's session.
 */
export function ownerKey(owner: Owner): string {
  return createHash('sha256')
    .update(JSON.stringify([owner.tenant ?? null, owner.principal]))
    .digest('base64url')
    .slice(0, 22);
}

/** A caller without the role an operation needs, on a run it may see (403). */
export class Forbidden extends StepwiseError {
  override readonly name = 'Forbidden';
}

/** The caller already has as many running runs as the deployment allows (429). */
export class TooManyRuns extends StepwiseError {
  override readonly name = 'TooManyRuns';
}

/** Glob patterns (`*` any run of characters, `?` one) matched against a whole string. */
export function globMatches(pattern: string, value: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${source}$`, 's').test(value);
}

/** The scopes of a token as Stepwise names them: `stepwise/approve`, `stepwise/admin`. */
export const scopePrefix = 'stepwise/';

export interface ClaimSettings {
  /** The claim that names the caller's tenant; no tenants when absent. */
  tenantClaim?: string;
}

/**
 * The caller a verified JWT names: `iss` and `sub` make the principal, the tenant comes from the
 * deployment's tenant claim, the roles from `scope` (space-separated) or `scp` (a list). The one
 * path for tokens checked by API Gateway's JWT authorizer and by the local server.
 */
export function callerFromClaims(claims: Record<string, unknown>, settings: ClaimSettings = {}): Caller {
  const iss = typeof claims.iss === 'string' ? claims.iss : '';
  const sub = typeof claims.sub === 'string' ? claims.sub : '';
  if (!iss || !sub) throw new Unauthenticated('The token names no issuer (iss) or subject (sub).');
  const tenantValue = settings.tenantClaim ? claims[settings.tenantClaim] : undefined;
  const tenant = typeof tenantValue === 'string' && tenantValue.length > 0 ? tenantValue : undefined;
  if (settings.tenantClaim && tenantValue !== undefined && tenant === undefined) {
    throw new Unauthenticated(`The token's ${settings.tenantClaim} claim is not a tenant name.`);
  }
  const granted = [...listOf(claims.scope), ...listOf(claims.scp)];
  const scopes = Scope.options.filter((scope) => granted.includes(`${scopePrefix}${scope}`));
  return Caller.parse({ principal: `${iss}#${sub}`, ...(tenant ? { tenant } : {}), scopes });
}

/** A claim holding scopes: a space-separated string, or a list of strings. */
function listOf(value: unknown): string[] {
  if (typeof value === 'string') return value.split(' ').filter(Boolean);
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return [];
}

export interface IamSettings {
  /** ARN patterns of reviewers (`approve`). */
  reviewerArns?: readonly string[];
  /** ARN patterns of admins. */
  adminArns?: readonly string[];
}

/** The caller of an IAM-signed request: its ARN, with the roles the deployment's ARN patterns give it. */
export function callerFromIam(arn: string, settings: IamSettings = {}): Caller {
  const matches = (patterns: readonly string[] = []) => patterns.some((pattern) => globMatches(pattern, arn));
  const scopes: Scope[] = [];
  if (matches(settings.reviewerArns)) scopes.push('approve');
  if (matches(settings.adminArns)) scopes.push('admin');
  return { principal: arn, scopes };
}

/**
 * The caller of an event: its source in its account, with no roles. A source the deployment
 * trusts may start a run on behalf of another caller (`onBehalfOf`), who then owns it.
 */
export function callerFromEvent(
  event: { account: string; source: string },
  onBehalfOf: Owner | undefined,
  trustedSources: readonly string[] = [],
): Caller {
  if (onBehalfOf) {
    if (!trustedSources.includes(event.source)) {
      throw new Forbidden(`Source ${event.source} is not trusted to start runs on behalf of another caller.`);
    }
    return { ...onBehalfOf, scopes: [] };
  }
  return { principal: `event:${event.account}:${event.source}`, scopes: [] };
}

/** A request without valid credentials (401). */
export class Unauthenticated extends StepwiseError {
  override readonly name = 'Unauthenticated';
}

/** What the local token issuer takes (`POST /_local/tokens`, `stepwise token`): a subject, its tenant and roles. */
export const TokenRequest = z
  .object({
    sub: z.string().min(1).max(256),
    tenant: z.string().min(1).max(256).optional(),
    scopes: z.array(Scope).max(2).optional(),
  })
  .strict();
export type TokenRequest = z.infer<typeof TokenRequest>;
