/**
 * The daily spend of each caller on DynamoDB: one partition per owner and UTC day, one item per
 * run that spent that day (whenever it started).
 *
 *   pk = spend#<ownerKey>#<yyyy-mm-dd>,  sk = run#<runId>   { usd, expiresAt }   (TTL on expiresAt)
 *
 * Each item copies what its run spent that day from the run record, which counts every call once,
 * toward the day it was counted (`spent#<day>`); the copy only ever raises `usd` (a conditional update), so a retried step, or
 * one whose copy was lost, changes nothing or catches up. The day's spend is the sum of the
 * partition (one Query). One counter item per day would need a marker per step to count each
 * once, and those would have to share its 400 KB; a transaction across two items is not what the
 * local emulator offers either.
 */
import type { Documents } from './documents.js';
import type { SpendStore } from '../../core/budgets/types.js';
import { type Owner } from '../../core/callers/types.js';
import { ownerKey } from '../../core/callers/access.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import { itemFamilies } from './layout.js';

/** Days a counter is kept after its day ends, before DynamoDB's TTL may delete it. */
export const spendRetentionDays = 2;

export class DynamoSpendStore implements SpendStore {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async spentOn(owner: Owner, day: string): Promise<number> {
    return guard('Reading the daily spend', async () => {
      let total = 0;
      const pages = this.doc.pages({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': partition(owner, day) },
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
          Key: { pk: partition(owner, day), sk: `run#${runId}` },
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

function partition(owner: Owner, day: string): string {
  return `${itemFamilies.spend}${ownerKey(owner)}#${day}`;
}
