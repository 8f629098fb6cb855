/**
 * Schedules on DynamoDB, one item each, in one partition per tenant so an admin lists the tenant's
 * with one Query and an owner its own with a key prefix:
 *
 *   pk = schedule#<tenantKey>, sk = <ownerKey>#<scheduleId>   { the schedule }
 */
import { createHash } from 'node:crypto';
import type { Documents } from './documents.js';
import { ownerKey } from '../../core/callers/access.js';
import type { Owner } from '../../core/callers/types.js';
import { Schedule, type ScheduleScope, type ScheduleState, type ScheduleStore } from '../../core/schedules/types.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import { queryAll } from './conversations.js';
import { itemFamilies } from './layout.js';

/** The partition of a tenant's schedules (one for callers without a tenant). */
function partitionOf(tenant: string | undefined): string {
  return `${itemFamilies.schedules}${createHash('sha256').update(JSON.stringify([tenant ?? null])).digest('base64url').slice(0, 22)}`;
}

function keyOf(owner: Owner, scheduleId: string) {
  return { pk: partitionOf(owner.tenant), sk: `${ownerKey(owner)}#${scheduleId}` };
}

const exists = 'attribute_exists(pk)';

export class DynamoScheduleStore implements ScheduleStore {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async create(schedule: Schedule, limit: number): Promise<boolean> {
    // A count, then a write: two creations racing may pass the limit by one each; it bounds what an owner keeps, not a spend.
    const owned = await guard('Counting schedules', () =>
      this.doc.query({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :owner)',
        ExpressionAttributeValues: { ':pk': partitionOf(schedule.owner.tenant), ':owner': `${ownerKey(schedule.owner)}#` },
        Select: 'COUNT',
        ConsistentRead: true,
      }),
    );
    if (owned.Count >= limit) return false;
    await guard('Creating a schedule', () =>
      this.doc.put({ TableName: this.table, Item: { ...keyOf(schedule.owner, schedule.scheduleId), ...Schedule.parse(schedule) }, ConditionExpression: 'attribute_not_exists(pk)' }),
    );
    return true;
  }

  async get(owner: Owner, scheduleId: string): Promise<Schedule | undefined> {
    const out = await guard('Reading a schedule', () => this.doc.get({ TableName: this.table, Key: keyOf(owner, scheduleId), ConsistentRead: true }));
    return out.Item ? toSchedule(out.Item) : undefined;
  }

  async find(tenant: string | undefined, scheduleId: string): Promise<Schedule | undefined> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: 'scheduleId = :id',
      ExpressionAttributeValues: { ':pk': partitionOf(tenant), ':id': scheduleId },
      ConsistentRead: true,
    }, 'Finding a schedule');
    return items[0] ? toSchedule(items[0]) : undefined;
  }

  async list(scope: ScheduleScope): Promise<Schedule[]> {
    const byOwner = 'owner' in scope;
    const items = await queryAll(this.doc, {
      TableName: this.table,
      KeyConditionExpression: byOwner ? 'pk = :pk AND begins_with(sk, :owner)' : 'pk = :pk',
      ExpressionAttributeValues: byOwner ? { ':pk': partitionOf(scope.owner.tenant), ':owner': `${ownerKey(scope.owner)}#` } : { ':pk': partitionOf(scope.tenant) },
      ConsistentRead: true,
    }, 'Listing schedules');
    return items.map(toSchedule).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  async setState(schedule: Schedule, state: ScheduleState, now: Date): Promise<Schedule | undefined> {
    try {
      const out = await guard('Changing a schedule', () =>
        this.doc.update({
          TableName: this.table,
          Key: keyOf(schedule.owner, schedule.scheduleId),
          UpdateExpression: 'SET #state = :state, updatedAt = :now',
          ConditionExpression: exists,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':state': state, ':now': now.toISOString() },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes ? toSchedule(out.Attributes) : undefined;
    } catch (error) {
      if (isConditionFailed(error)) return undefined;
      throw error;
    }
  }

  async delete(schedule: Schedule): Promise<void> {
    await guard('Deleting a schedule', () => this.doc.delete({ TableName: this.table, Key: keyOf(schedule.owner, schedule.scheduleId) }));
  }

  async claimRun(schedule: Schedule, runId: string, expected: string | undefined, now: Date): Promise<boolean> {
    try {
      await guard('Claiming a schedule run', () =>
        this.doc.update({
          TableName: this.table,
          Key: keyOf(schedule.owner, schedule.scheduleId),
          UpdateExpression: 'SET lastRunId = :run, lastRunAt = :now',
          ConditionExpression: expected === undefined ? `${exists} AND attribute_not_exists(lastRunId)` : `${exists} AND lastRunId = :expected`,
          ExpressionAttributeValues: { ':run': runId, ':now': now.toISOString(), ...(expected === undefined ? {} : { ':expected': expected }) },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  async recordSkip(schedule: Schedule, now: Date): Promise<void> {
    try {
      await guard('Counting a skipped firing', () =>
        this.doc.update({
          TableName: this.table,
          Key: keyOf(schedule.owner, schedule.scheduleId),
          UpdateExpression: 'SET lastSkippedAt = :now ADD skipped :one',
          ConditionExpression: exists,
          ExpressionAttributeValues: { ':now': now.toISOString(), ':one': 1 },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
  }
}

function toSchedule(item: Record<string, unknown>): Schedule {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return Schedule.parse(rest);
}
