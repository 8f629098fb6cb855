/**
 * Callers, owners and scopes (docs/callers-and-security.md, "Callers and owners"): who is asking, and what a deployment lets each do.
 */
import * as z from 'zod';
import { named } from '../errors/errors.js';

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

/** The caller of the local server when a request carries no token: the docs' examples need no header. */
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

/** A caller without the role an operation needs, on a run it may see (403). */
export class Forbidden extends named('Forbidden') {}

/** The caller already has as many running runs as the deployment allows (429). */
export class TooManyRuns extends named('TooManyRuns') {}

export interface ClaimSettings {
  /** The claim that names the caller's tenant; no tenants when absent. */
  tenantClaim?: string;
  /**
   * A token without the tenant claim is a caller without a tenant, instead of refused (401): the
   * local server, whose own issuer hands out tokens with and without a tenant.
   * @default false
   */
  tenantOptional?: boolean;
}

/**
 * How an IAM caller that assumed a role is named. `role`: by the role alone, the session name
 * ignored, since whoever may assume a role chooses its session name (API Gateway passes no
 * `aws:SourceIdentity` to tell sessions apart). `session`: by the whole assumed-role ARN, session
 * name included; only where the role's trust policy fixes the session name (IAM Identity Center,
 * or an `sts:RoleSessionName` condition).
 */
export const IamIdentity = z.enum(['role', 'session']);

export type IamIdentity = z.infer<typeof IamIdentity>;

export interface IamSettings {
  /** How assumed-role callers are named. @default 'role' */
  identity?: IamIdentity;
  /** ARN patterns of reviewers (`approve`). */
  reviewerArns?: readonly string[];
  /** ARN patterns of admins. */
  adminArns?: readonly string[];
}

/** A request without valid credentials (401). */
export class Unauthenticated extends named('Unauthenticated') {}

/** What the local token issuer takes (`POST /_local/tokens`, `stepwise token`): a subject, its tenant and roles. */
export const TokenRequest = z
  .object({
    sub: z.string().min(1).max(256),
    tenant: z.string().min(1).max(256).optional(),
    scopes: z.array(Scope).max(2).optional(),
  })
  .strict();

export type TokenRequest = z.infer<typeof TokenRequest>;
