import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Caller,
  Forbidden,
  type Owner,
  Unauthenticated,
  accessTo,
  callerFromClaims,
  callerFromEvent,
  callerFromIam,
  globMatches,
  ownerKey,
} from '../../functions/core/callers.js';

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

  it('refuses a token without a subject, or with a tenant claim that is not a name', () => {
    expect(() => callerFromClaims({ iss: 'i' })).toThrow(Unauthenticated);
    expect(() => callerFromClaims({ iss: 'i', sub: 's', tenant: ['a', 'b'] }, { tenantClaim: 'tenant' })).toThrow(Unauthenticated);
  });
});

describe('callerFromIam', () => {
  it('gives the roles whose ARN patterns match the whole ARN', () => {
    const settings = { reviewerArns: ['arn:aws:sts::111:assumed-role/Reviewers/*'], adminArns: ['arn:aws:iam::111:user/admin'] };
    expect(callerFromIam('arn:aws:sts::111:assumed-role/Reviewers/rita', settings)).toEqual({
      principal: 'arn:aws:sts::111:assumed-role/Reviewers/rita',
      scopes: ['approve'],
    });
    expect(callerFromIam('arn:aws:iam::111:user/admin2', settings).scopes).toEqual([]);
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
});
