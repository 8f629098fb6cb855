/**
 * The running-runs quota on DynamoDB (docs/callers-and-security.md, "Quotas"): one item per slot
 * of an owner, taken with a conditional write, so parallel requests cannot all pass the limit.
 *
 *   pk = slot#<ownerKey>,  sk = <slot number>   { holder, takenAt }   (no holder: free)
 *
 * The open event streams of an owner are capped the same way, under `stream#<ownerKey>`
 * (`DynamoStreamSlots`), a slot held by a stream until it ends.
 *
 * A slot is taken over once its holder no longer runs, whatever ended it (the orchestrator's own
 * states, a cancel, the execution-ended rule), so nothing has to give a slot back, and no end of a
 * run, retried or not, can free one twice. A run counter would need every end to decrement it
 * exactly once, the orchestrator's direct DynamoDB updates included, and a transaction across the
 * run record and the counter, which the local emulator does not offer.
 */
import type { Documents } from './documents.js';
import type { Owner } from '../../core/callers/types.js';
import { ownerKey } from '../../core/callers/access.js';
import type { RunSlots } from '../../core/intake/types.js';
import type { StreamSlots } from '../../core/stream/types.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import { type ItemFamily, itemFamilies } from './layout.js';

/** How long a slot whose run has no record yet stands (the holder's intake is under way). */
export const slotGraceSeconds = 60;

export interface RunSlotOptions {
  clock?: () => Date;
  /** Seconds after which a slot is taken over whatever its holder's record says (as the session locks' lease); none when absent. */
  leaseSeconds?: number;
  /** Whose slots: the running runs' (`slots`), or the open streams' (`streams`). @default 'slots' */
  family?: Extract<ItemFamily, 'slots' | 'streams'>;
}

interface Slot {
  number: number;
  holder?: string;
  takenAt?: number;
}

const epoch = (d: Date) => Math.floor(d.getTime() / 1000);

export class DynamoRunSlots implements RunSlots {
  private readonly clock: () => Date;

  constructor(
    private readonly doc: Documents,
    private readonly table: string,
    private readonly options: RunSlotOptions = {},
  ) {
    this.clock = options.clock ?? (() => new Date());
  }

  async take(owner: Owner, runId: string, limit: number, isRunning: (runId: string) => Promise<boolean | undefined>): Promise<boolean> {
    // Each lost race means another request took a slot; after `limit` of them every slot was taken since.
    for (let attempt = 0; attempt <= limit; attempt++) {
      const slots = await this.slotsOf(owner);
      if (slots.some((slot) => slot.holder === runId)) return true;
      const held = new Map(slots.filter((slot) => slot.holder !== undefined).map((slot) => [slot.number, slot]));
      const free = Array.from({ length: limit }, (_, number) => number).find((number) => !held.has(number));
      if (free !== undefined) {
        if (await this.swap(owner, free, runId, undefined)) return true;
        continue;
      }
      const lost = await this.endedHolder([...held.values()].filter((slot) => slot.number < limit), isRunning);
      if (!lost) return false;
      if (await this.swap(owner, lost.number, runId, lost.holder)) return true;
    }
    return false;
  }

  async release(owner: Owner, runId: string): Promise<void> {
    const slot = (await this.slotsOf(owner)).find((s) => s.holder === runId);
    if (!slot) return;
    try {
      await guard('Freeing a run slot', () =>
        this.doc.update({
          TableName: this.table,
          Key: this.keyOf(owner, slot.number),
          UpdateExpression: 'REMOVE holder, takenAt',
          ConditionExpression: 'holder = :run',
          ExpressionAttributeValues: { ':run': runId },
        }),
      );
    } catch (error) {
      // Taken over already.
      if (!isConditionFailed(error)) throw error;
    }
  }

  /** The first held slot whose run has ended, never got a record within the grace period, or outlived its lease. */
  private async endedHolder(held: Slot[], isRunning: (runId: string) => Promise<boolean | undefined>): Promise<Slot | undefined> {
    const now = epoch(this.clock());
    for (const slot of held) {
      const takenAt = slot.takenAt ?? 0;
      if (this.options.leaseSeconds !== undefined && takenAt <= now - this.options.leaseSeconds) return slot;
      const running = await isRunning(slot.holder ?? '');
      if (running === false || (running === undefined && takenAt <= now - slotGraceSeconds)) return slot;
    }
    return undefined;
  }

  private partition(owner: Owner): string {
    return `${itemFamilies[this.options.family ?? 'slots']}${ownerKey(owner)}`;
  }

  private keyOf(owner: Owner, number: number): { pk: string; sk: string } {
    return { pk: this.partition(owner), sk: String(number) };
  }

  private async slotsOf(owner: Owner): Promise<Slot[]> {
    const out = await guard('Reading run slots', () =>
      this.doc.query({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': this.partition(owner) },
        ConsistentRead: true,
      }),
    );
    return out.Items.map((item) => ({
      number: Number(item.sk),
      ...(typeof item.holder === 'string' ? { holder: item.holder } : {}),
      ...(typeof item.takenAt === 'number' ? { takenAt: item.takenAt } : {}),
    }));
  }

  /** Makes `runId` the slot's holder if `previous` still holds it (none: the slot is free). */
  private async swap(owner: Owner, number: number, runId: string, previous: string | undefined): Promise<boolean> {
    try {
      await guard('Taking a run slot', () =>
        this.doc.update({
          TableName: this.table,
          Key: this.keyOf(owner, number),
          UpdateExpression: 'SET holder = :run, takenAt = :at',
          ConditionExpression: previous === undefined ? 'attribute_not_exists(holder)' : 'holder = :previous',
          ExpressionAttributeValues: { ':run': runId, ':at': epoch(this.clock()), ...(previous === undefined ? {} : { ':previous': previous }) },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }
}

/**
 * The open event streams of each owner (docs/http-api.md, "Limits on streams"): a slot per stream
 * while it is open. A stream gives its slot back when it ends; one whose function crashed is
 * taken over once the slot is older than `leaseSeconds` (the longest a stream lives, plus a
 * margin), so no renewal is needed while it streams.
 */
export class DynamoStreamSlots implements StreamSlots {
  private readonly slots: DynamoRunSlots;

  constructor(doc: Documents, table: string, options: { leaseSeconds: number; clock?: () => Date }) {
    this.slots = new DynamoRunSlots(doc, table, { ...options, family: 'streams' });
  }

  take(owner: Owner, streamId: string, limit: number): Promise<boolean> {
    // An open stream holds its slot until it gives it back or its lease runs out.
    return this.slots.take(owner, streamId, limit, async () => true);
  }

  release(owner: Owner, streamId: string): Promise<void> {
    return this.slots.release(owner, streamId);
  }
}
