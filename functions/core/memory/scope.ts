/**
 * Where a run's memory is kept: one S3 prefix per scope key, the key hashed so that principals,
 * tenants and session ids with any characters map to safe, fixed-length keys (docs/memory.md).
 */
import { createHash } from 'node:crypto';
import type { Owner } from '../callers/types.js';
import { ownerKey } from '../callers/access.js';
import { InvalidMemory, type MemoryScope } from './types.js';

function hashOf(parts: readonly (string | null)[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
}

/**
 * The key prefix of a scope: `memories/owner/<hash of tenant and principal>/`,
 * `memories/tenant/<hash of tenant>/`, `memories/session/<hash of tenant, principal and session>/`.
 * `InvalidMemory` when the scope needs what the caller lacks (a tenant, a session id).
 */
export function memoryPrefix(scope: MemoryScope, owner: Owner, sessionId?: string): string {
  switch (scope) {
    case 'owner':
      return `memories/owner/${ownerKey(owner)}/`;
    case 'tenant':
      if (owner.tenant === undefined) throw new InvalidMemory('is "tenant", but the caller has no tenant; use "owner" or "session"');
      return `memories/tenant/${hashOf(['tenant', owner.tenant])}/`;
    case 'session':
      if (sessionId === undefined) throw new InvalidMemory('is "session", but the request has no sessionId; give one, or use "owner"');
      return `memories/session/${hashOf(['session', owner.tenant ?? null, owner.principal, sessionId])}/`;
  }
}
