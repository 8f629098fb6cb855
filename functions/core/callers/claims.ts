/**
 * The caller of a request or an event, read from what vouches for it: a JWT's claims, an IAM
 * principal's ARN, an event's source.
 */
import { Caller, type ClaimSettings, Forbidden, type IamSettings, type Owner, Scope, Unauthenticated } from './types.js';
import { globMatches } from './access.js';

/** The scopes of a token as Stepwise names them: `stepwise/approve`, `stepwise/admin`. */
export const scopePrefix = 'stepwise/';

/**
 * The caller a verified JWT names: `iss` and `sub` make the principal, the tenant comes from the
 * deployment's tenant claim (required when one is configured), the roles from `scope`
 * (space-separated) or `scp` (a list). The one
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
  // Where tenants are configured, a token without one would join a shared "no tenant" pool, whose
  // reviewers would see all of it: refused, unless the issuer is the local server's own.
  if (settings.tenantClaim && tenantValue === undefined && !settings.tenantOptional) {
    throw new Unauthenticated(`The token carries no ${settings.tenantClaim} claim; this deployment needs every caller's tenant.`);
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

/**
 * The caller of an IAM-signed request: its ARN, an assumed role's without the session name unless
 * the deployment trusts session names (`identity: 'session'`), with the roles the deployment's ARN
 * patterns give that principal.
 */
export function callerFromIam(arn: string, settings: IamSettings = {}): Caller {
  const principal = settings.identity === 'session' ? arn : withoutSession(arn);
  const matches = (patterns: readonly string[] = []) => patterns.some((pattern) => globMatches(pattern, principal));
  const scopes: Scope[] = [];
  if (matches(settings.reviewerArns)) scopes.push('approve');
  if (matches(settings.adminArns)) scopes.push('admin');
  return { principal, scopes };
}

/** An assumed-role session's ARN as its role's (`arn:…:sts::<account>:assumed-role/<role>`); any other ARN as it is. */
export function withoutSession(arn: string): string {
  return /^(arn:[^:]+:sts::[^:]*:assumed-role\/[^/]+)\/[^/]+$/.exec(arn)?.[1] ?? arn;
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
