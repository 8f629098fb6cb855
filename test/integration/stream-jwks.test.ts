/**
 * JWT mode at the stream function's URL, against an issuer on loopback: the function finds the
 * issuer's key set as API Gateway does (`<issuer>/.well-known/openid-configuration` → `jwks_uri`),
 * keeps it between requests, tells a bad token (401) from an issuer it cannot reach (500).
 */
import { type AddressInfo } from 'node:net';
import { type Server, createServer } from 'node:http';
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { IssuerUnavailable } from '../../functions/api/callers.js';
import { Unauthenticated } from '../../functions/core/callers/types.js';
import { streamCallers } from '../../functions/wiring/api.js';
import { readEnv } from '../../functions/wiring/wire.js';

let server: Server;
let issuer: string;
let key: CryptoKey;
let jwk: JWK;
/** The paths the issuer was asked for, in order. */
let requested: string[] = [];
let down = false;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  key = pair.privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  server = createServer((request, response) => {
    requested.push(request.url ?? '');
    if (down) return void response.writeHead(503).end();
    const routes: Record<string, unknown> = {
      '/pool/.well-known/openid-configuration': { issuer, jwks_uri: `${issuer}/keys.json` },
      '/pool/keys.json': { keys: [jwk] },
      '/elsewhere/keys.json': { keys: [jwk] },
    };
    const body = routes[request.url ?? ''];
    if (!body) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pool`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  requested = [];
  down = false;
});

const env = (extra: Record<string, string> = {}) =>
  readEnv({ STEPWISE_TABLE: 't', STEPWISE_BUCKET: 'b', STEPWISE_AUTH: 'jwt', STEPWISE_JWT_ISSUER: issuer, STEPWISE_JWT_AUDIENCE: 'stepwise', ...extra });

const token = (kid = 'k1') =>
  new SignJWT({ scope: 'stepwise/approve' }).setProtectedHeader({ alg: 'RS256', kid }).setIssuer(issuer).setSubject('alice').setAudience('stepwise').setExpirationTime('1h').sign(key);
const bearer = async (kid?: string) => ({ authorization: `Bearer ${await token(kid)}` });

describe('streamCallers in JWT mode, with the issuer\'s own key set', () => {
  it('finds the key set through the issuer\'s OpenID configuration once, and keeps it for later requests', async () => {
    const authenticate = streamCallers(env());
    expect(await authenticate(await bearer())).toEqual({ principal: `${issuer}#alice`, scopes: ['approve'] });
    expect(await authenticate(await bearer())).toEqual({ principal: `${issuer}#alice`, scopes: ['approve'] });
    expect(requested).toEqual(['/pool/.well-known/openid-configuration', '/pool/keys.json']);
  });

  it('reads the key set where the deployment names it, without discovery', async () => {
    const authenticate = streamCallers(env({ STEPWISE_JWKS_URL: issuer.replace('/pool', '/elsewhere/keys.json') }));
    expect(await authenticate(await bearer())).toMatchObject({ principal: `${issuer}#alice` });
    expect(requested).toEqual(['/elsewhere/keys.json']);
  });

  it('refuses a token naming a key the issuer does not publish with 401, after looking for it', async () => {
    const authenticate = streamCallers(env());
    await expect(authenticate(await bearer('rotated-away'))).rejects.toThrow(Unauthenticated);
    expect(requested).toContain('/pool/keys.json');
  });

  it('answers an issuer it cannot reach as its own fault, not the caller\'s, and tries again on the next request', async () => {
    const authenticate = streamCallers(env());
    down = true;
    const refusal = authenticate(await bearer());
    await expect(refusal).rejects.toThrow(IssuerUnavailable);
    await expect(refusal).rejects.not.toThrow(Unauthenticated);
    down = false;
    expect(await authenticate(await bearer())).toMatchObject({ principal: `${issuer}#alice` });
    expect(requested).toEqual(['/pool/.well-known/openid-configuration', '/pool/.well-known/openid-configuration', '/pool/keys.json']);
  });
});
