/**
 * The local server's token issuer: real JWTs (ES256, `jose`), signed with a key kept under the
 * data dir so tokens survive a restart. `POST /_local/tokens` and `stepwise token` hand them out;
 * the API verifies them and reads their claims as it reads a JWT authorizer's.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair, importJWK, jwtVerify } from 'jose';
import { TokenRequest } from '../functions/core/callers/types.js';
import { scopePrefix } from '../functions/core/callers/claims.js';

export const localIssuer = 'stepwise-local';
export const localAudience = 'stepwise';
/** The claim that names a local caller's tenant. */
export const localTenantClaim = 'tenant';


export interface LocalIssuer {
  /** A token for the caller, valid for `ttlSeconds` (12 hours by default), for `audience` (this API's by default). */
  issue(request: TokenRequest, options?: { ttlSeconds?: number; audience?: string }): Promise<string>;
  /** The claims of a token this issuer signed, for this audience, unexpired; throws otherwise. */
  verify(token: string): Promise<Record<string, unknown>>;
}

const algorithm = 'ES256';

/** The issuer whose key lives in `dir` (created on first use). */
export async function localIssuerIn(dir: string): Promise<LocalIssuer> {
  const file = join(dir, 'issuer-key.json');
  let privateJwk: JWK;
  if (existsSync(file)) {
    privateJwk = JSON.parse(readFileSync(file, 'utf8')) as JWK;
  } else {
    const { privateKey } = await generateKeyPair(algorithm, { extractable: true });
    privateJwk = await exportJWK(privateKey);
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, JSON.stringify(privateJwk), { mode: 0o600 });
  }
  const privateKey = (await importJWK(privateJwk, algorithm)) as CryptoKey;
  const { d: _secret, ...publicJwk } = privateJwk;
  const publicKey = (await importJWK(publicJwk, algorithm)) as CryptoKey;
  return {
    async issue(request, { ttlSeconds = 12 * 3600, audience = localAudience } = {}) {
      const { sub, tenant, scopes = [] } = TokenRequest.parse(request);
      return new SignJWT({
        ...(tenant ? { [localTenantClaim]: tenant } : {}),
        ...(scopes.length ? { scope: scopes.map((s) => `${scopePrefix}${s}`).join(' ') } : {}),
      })
        .setProtectedHeader({ alg: algorithm })
        .setIssuer(localIssuer)
        .setAudience(audience)
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime(`${ttlSeconds}s`)
        .sign(privateKey);
    },
    async verify(token) {
      const { payload } = await jwtVerify(token, publicKey, { issuer: localIssuer, audience: localAudience, algorithms: [algorithm] });
      return payload;
    },
  };
}
