import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Caller, Forbidden, type Owner, Unauthenticated } from '../../functions/core/callers/types.js';
import { accessTo, globMatches, ownerKey } from '../../functions/core/callers/access.js';
import { callerFromClaims, callerFromEvent, callerFromIam } from '../../functions/core/callers/claims.js';

const principals = ['iss#alice', 'iss#bob', 'iss#rita', 'arn:aws:iam::1:user/ops'];
const tenants = [undefined, 'acme', 'globex'];
const owner = fc.record({ principal: fc.constantFrom(...principals), tenant: fc.constantFrom(...tenants) }).map(
  ({ principal, tenant }): Owner => (tenant ? { principal, tenant } : { principal }),
);
const caller = fc
  .tuple(owner, fc.subarray(['approve', 'admin'] as const))
  .map(([who, scopes]): Caller => ({ ...who, scopes: [...scopes] }));

describe('accessTo', () => {
  it('lets a caller see a run iff it owns it or reviews its tenant (admins alone see runs without an owner)', () => {
    fc.assert(
      fc.property(caller, fc.option(owner, { nil: undefined }), (who, runOwner) => {
        const isOwner = runOwner !== undefined && runOwner.principal === who.principal && runOwner.tenant === who.tenant;
        const sameTenant = (runOwner?.tenant ?? null) === (who.tenant ?? null);
        const role = runOwner === undefined ? who.scopes.includes('admin') : who.scopes.length > 0;
        const expected = isOwner || (sameTenant && role);
        expect(accessTo(who, runOwner, 'read') === 'allowed').toBe(expected);
        // Whatever the access, a caller that cannot see the run is told it does not exist.
        for (const access of ['read', 'cancel', 'decide'] as const) {
          expect(accessTo(who, runOwner, access) === 'hidden').toBe(!expected);
        }
      }),
    );
  });

  it('lets the owner and an admin of its tenant cancel, and nobody else who sees the run', () => {
    const alice: Owner = { principal: 'iss#alice', tenant: 'acme' };
    expect(accessTo({ ...alice, scopes: [] }, alice, 'cancel')).toBe('allowed');
    expect(accessTo({ principal: 'iss#rita', tenant: 'acme', scopes: ['approve'] }, alice, 'cancel')).toBe('forbidden');
    expect(accessTo({ principal: 'iss#root', tenant: 'acme', scopes: ['admin'] }, alice, 'cancel')).toBe('allowed');
    expect(accessTo({ principal: 'iss#root', tenant: 'globex', scopes: ['admin'] }, alice, 'cancel')).toBe('hidden');
  });

  it('lets only reviewers decide, and keeps owners off their own calls when reviewers must be separate', () => {
    const alice: Owner = { principal: 'iss#alice', tenant: 'acme' };
    expect(accessTo({ ...alice, scopes: [] }, alice, 'decide')).toBe('forbidden');
    expect(accessTo({ ...alice, scopes: ['approve'] }, alice, 'decide')).toBe('allowed');
    expect(accessTo({ ...alice, scopes: ['approve'] }, alice, 'decide', { separateReviewer: true })).toBe('forbidden');
    expect(accessTo({ principal: 'iss#rita', tenant: 'acme', scopes: ['approve'] }, alice, 'decide', { separateReviewer: true })).toBe('allowed');
    expect(accessTo({ principal: 'iss#root', tenant: 'acme', scopes: ['admin'] }, alice, 'decide')).toBe('allowed');
  });
});

describe('ownerKey', () => {
  it('tells owners apart by principal and tenant, in a key safe for DynamoDB and conversation ids', () => {
    const keys = [
      ownerKey({ principal: 'iss#alice' }),
      ownerKey({ principal: 'iss#alice', tenant: 'acme' }),
      ownerKey({ principal: 'iss#bob', tenant: 'acme' }),
    ];
    expect(new Set(keys).size).toBe(3);
    for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(ownerKey({ principal: 'iss#alice', tenant: 'acme' })).toBe(keys[1]);
  });
});

describe('callerFromClaims', () => {
  it('makes the principal of iss and sub, the tenant of the named claim, and roles of stepwise scopes only', () => {
    expect(
      callerFromClaims(
        { iss: 'https://idp', sub: 'u1', 'custom:tenant': 'acme', scope: 'openid stepwise/approve other/admin' },
        { tenantClaim: 'custom:tenant' },
      ),
    ).toEqual({ principal: 'https://idp#u1', tenant: 'acme', scopes: ['approve'] });
    expect(callerFromClaims({ iss: 'i', sub: 's', scp: ['stepwise/admin'] })).toEqual({ principal: 'i#s', scopes: ['admin'] });
  });

  it('refuses a token without the tenant claim where one is configured, unless tenants are optional (the local issuer)', () => {
    expect(() => callerFromClaims({ iss: 'i', sub: 's', scope: 'stepwise/admin' }, { tenantClaim: 'org' })).toThrow(
      new Unauthenticated("The token carries no org claim; this deployment needs every caller's tenant."),
    );
    expect(callerFromClaims({ iss: 'i', sub: 's' }, { tenantClaim: 'org', tenantOptional: true })).toEqual({ principal: 'i#s', scopes: [] });
    expect(callerFromClaims({ iss: 'i', sub: 's' })).toEqual({ principal: 'i#s', scopes: [] });
  });

  it('refuses a token without a subject, or with a tenant claim that is not a name', () => {
    expect(() => callerFromClaims({ iss: 'i' })).toThrow(Unauthenticated);
    expect(() => callerFromClaims({ iss: 'i', sub: 's', tenant: ['a', 'b'] }, { tenantClaim: 'tenant' })).toThrow(Unauthenticated);
  });
});

describe('callerFromIam', () => {
  it('gives the roles whose ARN patterns match the whole ARN', () => {
    const settings = { reviewerArns: ['arn:aws:sts::111:assumed-role/Reviewers/*'], adminArns: ['arn:aws:iam::111:user/admin'], identity: 'session' as const };
    expect(callerFromIam('arn:aws:sts::111:assumed-role/Reviewers/rita', settings)).toEqual({
      principal: 'arn:aws:sts::111:assumed-role/Reviewers/rita',
      scopes: ['approve'],
    });
    expect(callerFromIam('arn:aws:iam::111:user/admin2', settings).scopes).toEqual([]);
  });

  it('names an assumed role by the role alone by default: a session name the caller chose changes nothing', () => {
    const settings = { reviewerArns: ['arn:aws:sts::111:assumed-role/Reviewers'], adminArns: ['arn:aws:sts::111:assumed-role/*/rita'] };
    const alice = callerFromIam('arn:aws:sts::111:assumed-role/Shared/alice', settings);
    expect(alice).toEqual({ principal: 'arn:aws:sts::111:assumed-role/Shared', scopes: [] });
    // Whatever session name is chosen, the caller is the role: no one takes a colleague's name.
    expect(callerFromIam('arn:aws:sts::111:assumed-role/Shared/bob', settings)).toEqual(alice);
    // A session named after an admin gains nothing; the reviewers' role is a reviewer whatever its session.
    expect(callerFromIam('arn:aws:sts::111:assumed-role/Shared/rita', settings).scopes).toEqual([]);
    expect(callerFromIam('arn:aws:sts::111:assumed-role/Reviewers/anyone', settings)).toEqual({ principal: 'arn:aws:sts::111:assumed-role/Reviewers', scopes: ['approve'] });
    // IAM users and other principals are named as they are.
    expect(callerFromIam('arn:aws:iam::111:user/ops/ann').principal).toBe('arn:aws:iam::111:user/ops/ann');
    expect(callerFromIam('arn:aws-us-gov:sts::111:assumed-role/Shared/x').principal).toBe('arn:aws-us-gov:sts::111:assumed-role/Shared');
  });

  it('keeps the session name only when the deployment says session names are trusted', () => {
    expect(callerFromIam('arn:aws:sts::111:assumed-role/Shared/alice', { identity: 'session' }).principal).toBe('arn:aws:sts::111:assumed-role/Shared/alice');
    expect(callerFromIam('arn:aws:sts::111:assumed-role/Shared/alice', { identity: 'role' }).principal).toBe('arn:aws:sts::111:assumed-role/Shared');
  });
});

describe('callerFromEvent', () => {
  it('is the source in its account, or the named caller when a trusted source asks for it', () => {
    expect(callerFromEvent({ account: '111', source: 'app.billing' }, undefined)).toEqual({ principal: 'event:111:app.billing', scopes: [] });
    expect(callerFromEvent({ account: '111', source: 'app.portal' }, { principal: 'iss#alice', tenant: 'acme' }, ['app.portal'])).toEqual({
      principal: 'iss#alice',
      tenant: 'acme',
      scopes: [],
    });
    expect(() => callerFromEvent({ account: '111', source: 'app.other' }, { principal: 'iss#alice' }, ['app.portal'])).toThrow(Forbidden);
  });
});

describe('globMatches', () => {
  it('matches * and ? against the whole string, everything else literally', () => {
    expect(globMatches('arn:aws:iam::*:role/a.b', 'arn:aws:iam::123:role/a.b')).toBe(true);
    expect(globMatches('arn:aws:iam::*:role/a.b', 'arn:aws:iam::123:role/aXb')).toBe(false);
    expect(globMatches('user/?', 'user/ab')).toBe(false);
    expect(globMatches('user/*', 'other/user/x')).toBe(false);
  });

  it('never lets * or ? cross a /: a pattern for one part of an ARN reaches no deeper part', () => {
    expect(globMatches('arn:aws:iam::111:user/*', 'arn:aws:iam::111:user/contractors/eve')).toBe(false);
    expect(globMatches('arn:aws:sts::111:assumed-role/*', 'arn:aws:sts::111:assumed-role/Admins/eve')).toBe(false);
    expect(globMatches('arn:aws:sts::111:assumed-role/Rev*', 'arn:aws:sts::111:assumed-role/Rev/x')).toBe(false);
    expect(globMatches('arn:aws:iam::111:user/a?b', 'arn:aws:iam::111:user/a/b')).toBe(false);
    // ** spans whole parts, for roles and users under a path.
    expect(globMatches('arn:aws:iam::111:user/**', 'arn:aws:iam::111:user/contractors/eve')).toBe(true);
    expect(globMatches('arn:aws:sts::*:assumed-role/Reviewers', 'arn:aws:sts::111:assumed-role/Reviewers')).toBe(true);
  });

  it('holds for any ARN: a pattern with one * matches a value only if that value has as many / as the pattern', () => {
    const part = fc.stringMatching(/^[A-Za-z0-9+=,.@_-]{1,12}$/);
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 4 }), fc.array(part, { minLength: 1, maxLength: 4 }), (head, tail) => {
        const pattern = `arn:aws:iam::111:${head.join('/')}/*`;
        const value = `arn:aws:iam::111:${head.join('/')}/${tail.join('/')}`;
        expect(globMatches(pattern, value)).toBe(tail.length === 1);
      }),
    );
  });
});

describe('callers, further', () => {
  it('take only string claims as the issuer, subject and tenant, and say which claim is wrong', () => {
    expect(() => callerFromClaims({ iss: 1, sub: 's' })).toThrow(new Unauthenticated('The token names no issuer (iss) or subject (sub).'));
    expect(() => callerFromClaims({ iss: 'i', sub: 2 })).toThrow(Unauthenticated);
    expect(() => callerFromClaims({ iss: 'i', sub: 's', org: '' }, { tenantClaim: 'org' })).toThrow(
      new Unauthenticated("The token's org claim is not a tenant name."),
    );
  });

  it('read scopes from a string with extra spaces or a list with other values, and none from anything else', () => {
    expect([
      callerFromClaims({ iss: 'i', sub: 's', scope: ' stepwise/approve  stepwise/admin ' }).scopes,
      callerFromClaims({ iss: 'i', sub: 's', scp: [7, 'stepwise/approve', null] }).scopes,
      callerFromClaims({ iss: 'i', sub: 's', scope: 42 }).scopes,
    ]).toEqual([['approve', 'admin'], ['approve'], []]);
  });

  it('give an IAM caller any role one of its patterns matches, and none without patterns', () => {
    const settings = { reviewerArns: ['arn:other', 'arn:aws:iam::1:user/*'], adminArns: ['arn:other', 'arn:aws:iam::1:user/root'] };
    expect([callerFromIam('arn:aws:iam::1:user/root', settings).scopes, callerFromIam('arn:aws:iam::1:user/root').scopes]).toEqual([
      ['approve', 'admin'],
      [],
    ]);
  });

  it('refuse an untrusted source by name, and trust none by default', () => {
    expect(() => callerFromEvent({ account: '1', source: 'app.x' }, { principal: 'iss#a' })).toThrow(
      new Forbidden('Source app.x is not trusted to start runs on behalf of another caller.'),
    );
  });

  it('let only an admin without a tenant see a run made before runs had owners, and only an admin or the owner cancel', () => {
    const reviewer: Caller = { principal: 'iss#rita', scopes: ['approve'] };
    const admin: Caller = { principal: 'iss#root', scopes: ['admin'] };
    const alice: Owner = { principal: 'iss#alice' };
    expect([
      accessTo(reviewer, undefined, 'read'),
      accessTo(admin, undefined, 'read'),
      accessTo(reviewer, alice, 'cancel'),
      accessTo(admin, alice, 'cancel'),
    ]).toEqual(['hidden', 'allowed', 'forbidden', 'allowed']);
  });

  it('match a glob with ? as exactly one character and $ literally', () => {
    expect([globMatches('user/?', 'user/a'), globMatches('a$b', 'a$b'), globMatches('a*', 'a\nb')]).toEqual([true, true, true]);
  });
});
