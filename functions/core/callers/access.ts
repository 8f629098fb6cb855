/**
 * Who may do what with a run: owners see their own, reviewers and admins their tenant's; everyone
 * else is answered as if the run did not exist.
 */
import { createHash } from 'node:crypto';
import type { Access, AccessPolicy, Caller, Owner, Scope, Verdict } from './types.js';

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

/**
 * ARN patterns (reviewers, admins) matched against a whole ARN: `*` any run of characters within
 * one `/`-separated part, `?` one character but `/`, `**` any run of characters, `/` included;
 * everything else literally. So `…:user/*` does not reach users under a path
 * (`…:user/contractors/eve`), nor `…:assumed-role/*` the sessions of every role. Not a path glob
 * library: ARN parts may be `.` or `..`, which path globs never match with `*`.
 */
export function globMatches(pattern: string, value: string): boolean {
  const source = pattern
    .split('**')
    .map((run) => run.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]'))
    .join('.*');
  return new RegExp(`^${source}$`, 's').test(value);
}
