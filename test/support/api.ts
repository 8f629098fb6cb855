/** The HTTP API on in-memory fakes, for route tests without I/O. */
import { type ApiDeps, createApi } from '../../functions/api/app.js';
import { bearerCallers } from '../../functions/api/callers.js';
import { type Owner, localCaller } from '../../functions/core/callers/types.js';
import type { ForkCopies } from '../../functions/core/fork/types.js';
import type { StreamSlots } from '../../functions/core/stream/types.js';
import type { IdempotencyStore, OrchestratorInput, RunSlots, RunStarter, SessionLocks } from '../../functions/core/intake/types.js';
import { ownerKey } from '../../functions/core/callers/access.js';
import { MemoryApprovalStore, MemoryConversationStore, MemoryLiveTexts, MemoryRunStore, MemoryWorkspace, RecordingTokens, memoryEventSources } from './memory.js';

export class RecordingStarter implements RunStarter {
  readonly started: OrchestratorInput[] = [];
  readonly stopped: string[] = [];
  async start(input: OrchestratorInput): Promise<void> {
    if (!this.started.some((s) => s.runId === input.runId)) this.started.push(input);
  }
  async stop(runId: string): Promise<void> {
    this.stopped.push(runId);
  }
  readonly announced: string[] = [];
  async announceCancelled(runId: string): Promise<void> {
    if (!this.announced.includes(runId)) this.announced.push(runId);
  }
}

export class MemoryIdempotency implements IdempotencyStore {
  readonly records = new Map<string, { runId: string; bodyHash: string }>();
  async get(key: string) {
    return this.records.get(key);
  }
  async claim(key: string, record: { runId: string; bodyHash: string }) {
    const standing = this.records.get(key);
    if (standing) return standing;
    this.records.set(key, record);
    return record;
  }
}

export class MemorySessions implements SessionLocks {
  readonly holders = new Map<string, string>();
  async acquire(sessionId: string, runId: string, isRunning: (id: string) => Promise<boolean | undefined>) {
    const holder = this.holders.get(sessionId);
    // A holder with no record yet is still starting: it keeps the session.
    if (holder && holder !== runId && (await isRunning(holder)) !== false) return holder;
    this.holders.set(sessionId, runId);
    return runId;
  }
  async release(sessionId: string, runId: string) {
    if (this.holders.get(sessionId) === runId) this.holders.delete(sessionId);
  }
}

/** The running-runs quota's slots in memory: each owner's holders, a slot taken over once its holder no longer runs. */
export class MemoryRunSlots implements RunSlots {
  readonly holders = new Map<string, (string | undefined)[]>();
  async take(owner: Owner, runId: string, limit: number, isRunning: (id: string) => Promise<boolean | undefined>) {
    const slots = this.holders.get(ownerKey(owner)) ?? [];
    this.holders.set(ownerKey(owner), slots);
    if (slots.includes(runId)) return true;
    for (let k = 0; k < limit; k++) {
      if (slots[k] !== undefined) continue;
      slots[k] = runId;
      return true;
    }
    for (let k = 0; k < limit; k++) {
      const holder = slots[k];
      // A holder with no record yet is still starting: it keeps its slot. Checked again after the wait, as a conditional write would.
      if (holder !== undefined && (await isRunning(holder)) === false && slots[k] === holder) {
        slots[k] = runId;
        return true;
      }
    }
    return false;
  }
  async release(owner: Owner, runId: string) {
    const slots = this.holders.get(ownerKey(owner)) ?? [];
    const at = slots.indexOf(runId);
    if (at >= 0) slots[at] = undefined;
  }
}

/** The open streams' slots in memory: a stream holds one until it gives it back. */
export class MemoryStreamSlots implements StreamSlots {
  readonly slots = new MemoryRunSlots();
  take(owner: Owner, streamId: string, limit: number) {
    return this.slots.take(owner, streamId, limit, async () => true);
  }
  release(owner: Owner, streamId: string) {
    return this.slots.release(owner, streamId);
  }
  /** How many streams are open, of every caller. */
  open(): number {
    return [...this.slots.holders.values()].flat().filter((holder) => holder !== undefined).length;
  }
}

/** The API on fakes; `extra` adds or replaces dependencies (e.g. `approvalTools`, `allowedModels`). */
export function memoryApi(extra: Partial<ApiDeps> = {}) {
  const runs = new MemoryRunStore();
  const conversations = new MemoryConversationStore();
  const workspaces = new Map<string, MemoryWorkspace>();
  const starter = new RecordingStarter();
  const idempotency = new MemoryIdempotency();
  const sessions = new MemorySessions();
  const approvals = new MemoryApprovalStore(runs);
  const tokens = new RecordingTokens();
  const live = new MemoryLiveTexts();
  const streamSlots = new MemoryStreamSlots();
  let n = 0;
  const workspace = (id: string) => {
    let w = workspaces.get(id);
    if (!w) workspaces.set(id, (w = new MemoryWorkspace()));
    return w;
  };
  const forks: ForkCopies = {
    conversation: (from, to, beforeSeq) => conversations.copyBefore(from, to, beforeSeq),
    async workspace(from, to, paths) {
      let copied = 0;
      for (const path of paths) {
        const bytes = await workspace(from).read(path);
        if (bytes && !(await workspace(to).read(path))) {
          await workspace(to).write(path, bytes);
          copied++;
        }
      }
      return copied;
    },
  };
  const app = createApi({
    runs,
    conversations,
    forks,
    starter,
    idempotency,
    sessions,
    slots: new MemoryRunSlots(),
    streamSlots,
    newId: () => `run-${++n}`,
    workspaceFor: workspace,
    approvals,
    tokens,
    authenticate: testCallers,
    events: memoryEventSources(conversations, runs, approvals, live),
    // A stream of a run that goes nowhere here ends soon (with the cursor to resume from).
    stream: { maxDurationMs: 50, fastPollMs: 5, idlePollMs: 10 },
    ...extra,
  });
  const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init: RequestInit = { method, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers } };
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
    const res = await app.request(path, init);
    const text = await res.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: json as Record<string, unknown> & { error?: { code: string; issues?: { path: string }[] } } };
  };
  /** How many things were written anywhere: runs, starts, keys, session locks. */
  const writes = () => runs.runs.size + starter.started.length + idempotency.records.size + sessions.holders.size;
  return { app, runs, conversations, live, workspace, starter, idempotency, sessions, approvals, tokens, streamSlots, request, writes };
}

/**
 * Callers of the API on fakes: the bearer token is its claims as base64url JSON (no signature:
 * the local issuer's tests check signatures), read through the same path as real tokens; no
 * header is the local caller.
 */
export const testCallers = bearerCallers(
  async (token) => JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Record<string, unknown>,
  { tenantClaim: 'tenant', tenantOptional: true },
  localCaller,
);

/** The Authorization header of a test caller. */
export function as(sub: string, options: { tenant?: string; scopes?: ('approve' | 'admin')[] } = {}): Record<string, string> {
  const claims = { iss: 'test', sub, ...(options.tenant ? { tenant: options.tenant } : {}), scope: (options.scopes ?? []).map((s) => `stepwise/${s}`).join(' ') };
  return { authorization: `Bearer ${Buffer.from(JSON.stringify(claims)).toString('base64url')}` };
}
