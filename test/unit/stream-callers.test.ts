/**
 * Callers of the stream function's URL (functions/wiring/api.ts `streamCallers`): the same callers
 * as the HTTP API's. IAM: Lambda leaves the signed ARN where API Gateway does. JWT: the URL is open
 * and the function checks the token as API Gateway's JWT authorizer would, here against a key set
 * held in memory (test/integration/stream-jwks.test.ts fetches one from an issuer).
 */
import { type CryptoKey, type JWK, SignJWT, createLocalJWKSet, exportJWK, generateKeyPair } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { jwtClaimCallers } from '../../functions/api/callers.js';
import { Unauthenticated } from '../../functions/core/callers/types.js';
import { streamCallers } from '../../functions/wiring/api.js';
import { readEnv } from '../../functions/wiring/wire.js';
import { functionUrlEvent } from '../support/function-url.js';

const base = { STEPWISE_TABLE: 'table', STEPWISE_BUCKET: 'bucket' };
const issuer = 'https://idp.example.com/pool';
const jwtEnv = readEnv({
  ...base,
  STEPWISE_AUTH: 'jwt',
  STEPWISE_JWT_ISSUER: issuer,
  STEPWISE_JWT_AUDIENCE: 'stepwise, console',
  STEPWISE_TENANT_CLAIM: 'custom:tenant',
});

describe('streamCallers in IAM mode', () => {
  const env = readEnv({ ...base, STEPWISE_REVIEWER_ARNS: 'arn:aws:sts::111122223333:assumed-role/Reviewers', STEPWISE_ADMIN_ARNS: '' });
  const authenticate = streamCallers(env);

  it('reads the signed caller of a function URL request where the HTTP API leaves it, with the roles of its ARN', async () => {
    const reviewer = 'arn:aws:sts::111122223333:assumed-role/Reviewers/rita';
    const urlEvent = functionUrlEvent({ method: 'GET', path: '/runs/r/events', iamArn: reviewer });
    // An assumed role is its role, whatever the session's name (STEPWISE_IAM_IDENTITY defaults to role).
    expect(await authenticate({ lambdaEvent: urlEvent })).toEqual({ principal: 'arn:aws:sts::111122223333:assumed-role/Reviewers', scopes: ['approve'] });
    // The HTTP API's event (payload 2.0) carries the same context: one reader for both.
    const gatewayEvent = {
      version: '2.0',
      routeKey: 'GET /runs/{runId}',
      requestContext: { authorizer: { iam: { accessKey: 'ASIA', accountId: '111122223333', userArn: reviewer, userId: 'AROA:rita' } } },
    };
    expect(await authenticate({ lambdaEvent: gatewayEvent })).toEqual(await authenticate({ lambdaEvent: urlEvent }));
    const other = 'arn:aws:iam::111122223333:user/alice';
    expect(await authenticate({ lambdaEvent: functionUrlEvent({ method: 'GET', path: '/', iamArn: other }) })).toEqual({ principal: other, scopes: [] });
  });

  it('keeps the session name where the deployment trusts session names (STEPWISE_IAM_IDENTITY=session)', async () => {
    const sessions = streamCallers(readEnv({ ...base, STEPWISE_IAM_IDENTITY: 'session', STEPWISE_REVIEWER_ARNS: 'arn:aws:sts::111122223333:assumed-role/Reviewers/*' }));
    const reviewer = 'arn:aws:sts::111122223333:assumed-role/Reviewers/rita';
    expect(await sessions({ lambdaEvent: functionUrlEvent({ method: 'GET', path: '/', iamArn: reviewer }) })).toEqual({ principal: reviewer, scopes: ['approve'] });
    expect(() => readEnv({ ...base, STEPWISE_IAM_IDENTITY: 'sessions' })).toThrow('STEPWISE_IAM_IDENTITY');
  });

  it('refuses a request that carries no IAM identity (401), whatever token it brings', async () => {
    const unsigned = functionUrlEvent({ method: 'GET', path: '/runs/r/events' });
    await expect(authenticate({ lambdaEvent: unsigned, authorization: 'Bearer a.b.c' })).rejects.toThrow(Unauthenticated);
    await expect(authenticate({})).rejects.toThrow(Unauthenticated);
  });
});

describe('streamCallers in JWT mode', () => {
  let key: CryptoKey;
  let otherKey: CryptoKey;
  let authenticate: ReturnType<typeof streamCallers>;

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256', { extractable: true });
    key = pair.privateKey;
    otherKey = (await generateKeyPair('RS256')).privateKey;
    const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    authenticate = streamCallers(jwtEnv, createLocalJWKSet({ keys: [jwk] }));
  });

  /** A token for `claims`, signed with `signer` (the issuer's key by default), valid for an hour. */
  function token(claims: Record<string, unknown>, options: { signer?: CryptoKey; kid?: string | null; audience?: string; issuer?: string; expires?: number } = {}) {
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', ...(options.kid === null ? {} : { kid: options.kid ?? 'k1' }) })
      .setIssuer(options.issuer ?? issuer)
      .setSubject('alice')
      .setIssuedAt()
      .setExpirationTime(options.expires ?? Math.floor(Date.now() / 1000) + 3600);
    if (options.audience !== '') jwt.setAudience(options.audience ?? 'stepwise');
    return jwt.sign(options.signer ?? key);
  }
  const bearer = async (jwt: Promise<string> | string) => ({ authorization: `Bearer ${await jwt}`, lambdaEvent: functionUrlEvent({ method: 'GET', path: '/' }) });

  it('accepts a token of the issuer for one of the audiences: principal iss#sub, the tenant claim, the stepwise scopes', async () => {
    expect(await authenticate(await bearer(token({ 'custom:tenant': 'acme', scope: 'openid stepwise/approve' })))).toEqual({
      principal: `${issuer}#alice`,
      tenant: 'acme',
      scopes: ['approve'],
    });
    expect(await authenticate(await bearer(token({ 'custom:tenant': 'acme', scp: ['stepwise/admin'] }, { audience: 'console' })))).toEqual({
      principal: `${issuer}#alice`,
      tenant: 'acme',
      scopes: ['admin'],
    });
  });

  it('accepts client_id in place of aud, as API Gateway does (access tokens of Amazon Cognito carry no aud)', async () => {
    expect(await authenticate(await bearer(token({ 'custom:tenant': 'acme', client_id: 'console', token_use: 'access' }, { audience: '' })))).toEqual({
      principal: `${issuer}#alice`,
      tenant: 'acme',
      scopes: [],
    });
  });

  it('makes the same caller of the same claims as the HTTP API behind its JWT authorizer', async () => {
    const claims = { 'custom:tenant': 'acme', scp: ['stepwise/approve', 'stepwise/admin'] };
    const jwt = await token(claims);
    const verified = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    // API Gateway hands the function each claim as a string, lists written "[a b]".
    const gatewayClaims = Object.fromEntries(Object.entries(verified).map(([k, v]) => [k, Array.isArray(v) ? `[${v.join(' ')}]` : String(v)]));
    const gateway = jwtClaimCallers({ tenantClaim: 'custom:tenant' });
    expect(await authenticate(await bearer(jwt))).toEqual(
      await gateway({ lambdaEvent: { requestContext: { authorizer: { jwt: { claims: gatewayClaims, scopes: null } } } } }),
    );
  });

  it.each([
    ['no Authorization header', 'Send a token', () => ({ lambdaEvent: functionUrlEvent({ method: 'GET', path: '/' }) })],
    ['a header that is not a bearer token', 'must be "Bearer <token>"', () => ({ authorization: 'Basic YWxpY2U6c2VjcmV0' })],
    ['an expired token', '"exp" claim timestamp check failed', () => bearer(token({}, { expires: Math.floor(Date.now() / 1000) - 60 }))],
    ['a token for another audience', 'audience (aud or client_id) is not this API', () => bearer(token({}, { audience: 'billing' }))],
    ['a token with neither aud nor client_id', 'audience (aud or client_id) is not this API', () => bearer(token({}, { audience: '' }))],
    // API Gateway reads client_id only when aud is absent: a right client_id does not save a wrong aud.
    ['a token for another audience with this API\'s client_id', 'audience (aud or client_id) is not this API', () => bearer(token({ client_id: 'console' }, { audience: 'billing' }))],
    ['a token without the tenant claim the deployment names', 'carries no custom:tenant claim', () => bearer(token({ scp: ['stepwise/admin'] }))],
    ['a token of another issuer', 'unexpected "iss" claim value', () => bearer(token({}, { issuer: 'https://evil.example.com/pool' }))],
    ['a token signed by another key under the issuer\'s key id', 'signature verification failed', () => bearer(token({}, { signer: otherKey }))],
    ['a token naming no key id', 'names no key (kid)', () => bearer(token({}, { kid: null }))],
    ['a token naming a key the issuer does not have', 'no applicable key found', () => bearer(token({}, { kid: 'k2' }))],
    ['a token signed with a shared secret (HS256)', '"alg" (Algorithm) Header Parameter value not allowed', () => bearer(new SignJWT({}).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).setIssuer(issuer).setSubject('alice').setAudience('stepwise').setExpirationTime('1h').sign(new TextEncoder().encode('a secret of thirty-two bytes or more!')))],
    ['an unsigned token', '"alg" (Algorithm) Header Parameter value not allowed', () => bearer(`${Buffer.from('{"alg":"none","kid":"k1"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: issuer, sub: 'alice', aud: 'stepwise', exp: 4_000_000_000 })).toString('base64url')}.`)],
    ['a token without exp', 'missing required "exp" claim', () => bearer(new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(issuer).setSubject('alice').setAudience('stepwise').sign(key))],
    ['a token valid only later (nbf)', '"nbf" claim timestamp check failed', () => bearer(new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(issuer).setSubject('alice').setAudience('stepwise').setNotBefore('1h').setExpirationTime('2h').sign(key))],
  ])('refuses %s with Unauthenticated (401): %s', async (_case, reason, request) => {
    const refusal = authenticate(await request());
    await expect(refusal).rejects.toThrow(Unauthenticated);
    await expect(refusal).rejects.toThrow(reason);
  });

  it('ignores an IAM identity: in JWT mode the token is the credential', async () => {
    const signed = functionUrlEvent({ method: 'GET', path: '/', iamArn: 'arn:aws:iam::111122223333:user/alice' });
    await expect(authenticate({ lambdaEvent: signed })).rejects.toThrow(Unauthenticated);
  });

  it('fails at load, naming the variable, when the issuer or the audiences are missing', () => {
    expect(() => streamCallers(readEnv({ ...base, STEPWISE_AUTH: 'jwt', STEPWISE_JWT_AUDIENCE: 'stepwise' }))).toThrow('STEPWISE_JWT_ISSUER is not set');
    expect(() => streamCallers(readEnv({ ...base, STEPWISE_AUTH: 'jwt', STEPWISE_JWT_ISSUER: issuer }))).toThrow('STEPWISE_JWT_AUDIENCE is not set');
  });
});
