/**
 * The daily spend of each caller on DynamoDB: one item per run that spent that day (whenever it
 * started), spread over `spendShards` partitions per owner and UTC day by the run's id.
 *
 *   pk = spend#<ownerKey>#<yyyy-mm-dd>#<shard>,  sk = run#<runId>   { usd, expiresAt }   (TTL on expiresAt)
 *
 * Each item copies what its run spent that day from the run record, which counts every call once,
 * toward the day it was counted (`spent#<day>`); the copy only ever raises `usd` (a conditional update), so a retried step, or
 * one whose copy was lost, changes nothing or catches up. The day's spend is the sum of the
 * shards (one strongly consistent Query each, in parallel). One counter item per day would need a marker per step to count each
 * once, and those would have to share its 400 KB; a transaction across two items is not what the
 * local emulator offers either.
 *
 * Why shards (docs/SCALE.md, "Hot partitions"): every counted call of every run of an owner writes
 * its run's item, so one partition per owner and day took all of them (1,000 writes a second:
 * about 2,000 concurrent runs of one owner at a step every 2 s). A run's items all lie in one
 * shard, chosen from its id, so the owner's writes spread over `spendShards` partitions.
 *
 * Why the daily limit still cannot be raced (DESIGN §16): nothing about a check changed but where
 * it reads. A run's copy is written, and acknowledged, before its step reads the day's sum; the
 * sum reads every shard with strongly consistent Queries issued after that, so it sees every copy
 * acknowledged before it began, the run's own included, as the one Query of one partition did
 * (which was no snapshot either: its pages were read one after another). So the bound is the one
 * docs/costs.md states: the day can pass the limit by at most the calls in flight when its sum
 * reaches it, and no call starts after a check that saw it reached.
 */
import { createHash } from 'node:crypto';
import type { Documents } from './documents.js';
import type { SpendStore } from '../../core/budgets/types.js';
import { type Owner } from '../../core/callers/types.js';
import { ownerKey } from '../../core/callers/access.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import { itemFamilies } from './layout.js';

/** The partitions an owner's day is spread over: each takes the items of the runs whose id falls in it. */
export const spendShards = 8;

/** Days a counter is kept after its day ends, before DynamoDB's TTL may delete it. */
export const spendRetentionDays = 2;

export class DynamoSpendStore implements SpendStore {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async spentOn(owner: Owner, day: string): Promise<number> {
    const shards = Array.from({ length: spendShards }, (_, shard) => this.sumOf(partition(owner, day, shard)));
    return (await Promise.all(shards)).reduce((total, part) => total + part, 0);
  }

  private async sumOf(pk: string): Promise<number> {
    return guard('Reading the daily spend', async () => {
      let total = 0;
      const pages = this.doc.pages({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ProjectionExpression: 'usd',
        ConsistentRead: true,
      });
      for await (const page of pages) for (const item of page.Items) total += typeof item.usd === 'number' ? item.usd : 0;
      return total;
    });
  }

  async recordRun(owner: Owner, day: string, runId: string, usd: number): Promise<void> {
    const expiresAt = Math.floor(Date.parse(`${day}T00:00:00Z`) / 1000) + (1 + spendRetentionDays) * 86_400;
    try {
      await guard('Recording the daily spend', () =>
        this.doc.update({
          TableName: this.table,
          Key: { pk: partition(owner, day, shardOf(runId)), sk: `run#${runId}` },
          UpdateExpression: 'SET usd = :usd, expiresAt = :expires',
          ConditionExpression: 'attribute_not_exists(usd) OR usd < :usd',
          ExpressionAttributeValues: { ':usd': usd, ':expires': expiresAt },
        }),
      );
    } catch (error) {
      // Already this much or more: a repeat, or a stale copy after a newer one.
      if (!isConditionFailed(error)) throw error;
    }
  }
}

/** The partition of one shard of an owner's day. */
export function partition(owner: Owner, day: string, shard: number): string {
  return `${itemFamilies.spend}${ownerKey(owner)}#${day}#${shard}`;
}

/** The shard of a run's items: from its id, so every copy of a run goes to one item. */
export function shardOf(runId: string): number {
  return createHash('sha256').update(runId).digest().readUInt32BE(0) % spendShards;
}
