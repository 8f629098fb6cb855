/**
 * Idempotency keys and session locks on DynamoDB, with conditional writes.
 *
 *   pk = idem#<key>,       sk = idem   { runId, bodyHash, expiresAt }   (TTL on expiresAt)
 *   pk = session#<id>,     sk = lock   { activeRunId, acquiredAt }   (no activeRunId: free)
 */
import type { Documents } from './documents.js';
import type { IdempotencyStore, SessionLocks } from '../../core/intake/types.js';
import { guard, isConditionFailed } from '../aws/errors.js';

export const idempotencyWindowSeconds = 24 * 60 * 60;

const epoch = (d: Date) => Math.floor(d.getTime() / 1000);

export class DynamoIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async get(key: string, now: Date): Promise<{ runId: string; bodyHash: string } | undefined> {
    const out = await guard('Reading an idempotency key', () =>
      this.doc.get({ TableName: this.table, Key: keyOf(key), ConsistentRead: true }),
    );
    const item = out.Item as { runId: string; bodyHash: string; expiresAt: number } | undefined;
    // TTL deletes lazily: an expired record counts as absent.
    if (!item || item.expiresAt <= epoch(now)) return undefined;
    return { runId: item.runId, bodyHash: item.bodyHash };
  }

  async claim(key: string, record: { runId: string; bodyHash: string }, now: Date): Promise<{ runId: string; bodyHash: string }> {
    try {
      await guard('Recording an idempotency key', () =>
        this.doc.put({
          TableName: this.table,
          Item: { ...keyOf(key), ...record, expiresAt: epoch(now) + idempotencyWindowSeconds },
          ConditionExpression: 'attribute_not_exists(pk) OR expiresAt <= :now',
          ExpressionAttributeValues: { ':now': epoch(now) },
        }),
      );
      return record;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const standing = await this.get(key, now);
      if (!standing) throw new Error(`Idempotency key ${key} vanished during a claim.`);
      return standing;
    }
  }
}

/** How long a lock whose run has no record yet stands (the holder's intake is under way). */
export const sessionLockGraceSeconds = 60;

export interface SessionLockOptions {
  clock?: () => Date;
  /**
   * Seconds after which a lock is taken over even from a run whose record still says running: no
   * orchestrator execution outlives its timeout, so a holder that old was lost (its end was never
   * recorded). Deployed, the orchestrator's timeout plus a margin; no lease when absent.
   */
  leaseSeconds?: number;
}

export class DynamoSessionLocks implements SessionLocks {
  private readonly clock: () => Date;
  private readonly leaseSeconds: number | undefined;

  constructor(
    private readonly doc: Documents,
    private readonly table: string,
    options: SessionLockOptions = {},
  ) {
    this.clock = options.clock ?? (() => new Date());
    this.leaseSeconds = options.leaseSeconds;
  }

  async acquire(sessionId: string, runId: string, isRunning: (runId: string) => Promise<boolean | undefined>): Promise<string> {
    if (await this.take(sessionId, runId, 'attribute_not_exists(activeRunId) OR activeRunId = :run', {})) return runId;
    const out = await guard('Reading a session lock', () =>
      this.doc.get({ TableName: this.table, Key: lockKey(sessionId), ConsistentRead: true }),
    );
    const lock = out.Item as { activeRunId?: string; acquiredAt?: number } | undefined;
    const holder = lock?.activeRunId;
    if (!holder) return (await this.take(sessionId, runId, 'attribute_not_exists(activeRunId)', {})) ? runId : this.holder(sessionId);
    const acquiredAt = lock.acquiredAt ?? 0;
    const leaseExpired = this.leaseSeconds !== undefined && acquiredAt <= epoch(this.clock()) - this.leaseSeconds;
    const running = leaseExpired ? false : await isRunning(holder);
    const young = acquiredAt > epoch(this.clock()) - sessionLockGraceSeconds;
    if (running || (running === undefined && young)) return holder;
    // The holder has ended, never started, or outlived its lease: take the lock over, unless someone else just did.
    const taken = await this.take(sessionId, runId, 'activeRunId = :holder', { ':holder': holder });
    return taken ? runId : this.holder(sessionId);
  }

  async release(sessionId: string, runId: string): Promise<void> {
    try {
      await guard('Releasing a session lock', () =>
        this.doc.update({
          TableName: this.table,
          Key: lockKey(sessionId),
          UpdateExpression: 'REMOVE activeRunId, acquiredAt',
          ConditionExpression: 'activeRunId = :run',
          ExpressionAttributeValues: { ':run': runId },
        }),
      );
    } catch (error) {
      // Free already, or another run's now.
      if (!isConditionFailed(error)) throw error;
    }
  }

  private async holder(sessionId: string): Promise<string> {
    const out = await this.doc.get({ TableName: this.table, Key: lockKey(sessionId), ConsistentRead: true });
    return String((out.Item as { activeRunId?: string } | undefined)?.activeRunId ?? '');
  }

  private async take(sessionId: string, runId: string, condition: string, values: Record<string, string>): Promise<boolean> {
    try {
      await guard('Taking a session lock', () =>
        this.doc.update({
          TableName: this.table,
          Key: lockKey(sessionId),
          UpdateExpression: 'SET activeRunId = :run, acquiredAt = :at',
          ConditionExpression: condition,
          ExpressionAttributeValues: { ':run': runId, ':at': epoch(this.clock()), ...values },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }
}

function keyOf(key: string): { pk: string; sk: string } {
  return { pk: `idem#${key}`, sk: 'idem' };
}

function lockKey(sessionId: string): { pk: string; sk: string } {
  return { pk: `session#${sessionId}`, sk: 'lock' };
}
