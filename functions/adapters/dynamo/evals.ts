/**
 * Deployed evals' records on DynamoDB, one item per eval in its owner's partition, so another
 * caller's eval is never found and the owner's list is one query, newest first (eval ids sort by
 * their start):
 *
 *   pk = eval#<ownerKey>, sk = <evalId>   { evalId, name, owner, status, cases, concurrency, createdAt, updatedAt, summary?, error? }
 */
import { ownerKey } from '../../core/callers/access.js';
import type { EvalRecord, EvalStore } from '../../core/evals/types.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import type { Documents } from './documents.js';
import { itemFamilies } from './layout.js';

const partitionOf = (owner: EvalRecord['owner']) => `${itemFamilies.evals}${ownerKey(owner)}`;

function recordOf(item: Record<string, unknown>): EvalRecord {
  const { pk: _pk, sk: _sk, ...record } = item;
  return record as unknown as EvalRecord;
}

export class DynamoEvalStore implements EvalStore {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async create(record: EvalRecord): Promise<boolean> {
    try {
      await guard('Recording an eval', () =>
        this.doc.put({ TableName: this.table, Item: { pk: partitionOf(record.owner), sk: record.evalId, ...record }, ConditionExpression: 'attribute_not_exists(pk)' }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  async get(owner: EvalRecord['owner'], evalId: string): Promise<EvalRecord | undefined> {
    const out = await guard('Reading an eval', () => this.doc.get({ TableName: this.table, Key: { pk: partitionOf(owner), sk: evalId }, ConsistentRead: true }));
    return out.Item ? recordOf(out.Item) : undefined;
  }

  async list(owner: EvalRecord['owner'], limit: number): Promise<EvalRecord[]> {
    const page = await guard('Listing evals', () =>
      this.doc.query({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': partitionOf(owner) },
        ScanIndexForward: false,
        Limit: limit,
      }),
    );
    return page.Items.map(recordOf);
  }

  async finish(owner: EvalRecord['owner'], evalId: string, outcome: { status: 'succeeded' | 'failed'; summary?: EvalRecord['summary']; error?: string }, now: string): Promise<void> {
    try {
      await guard('Finishing an eval', () =>
        this.doc.update({
          TableName: this.table,
          Key: { pk: partitionOf(owner), sk: evalId },
          UpdateExpression: `SET #status = :status, updatedAt = :now${outcome.summary ? ', summary = :summary' : ''}${outcome.error ? ', #error = :error' : ''}`,
          // Once ended, an eval stays as it ended (a repeated last step changes nothing).
          ConditionExpression: 'attribute_exists(pk) AND #status = :running',
          ExpressionAttributeNames: { '#status': 'status', ...(outcome.error ? { '#error': 'error' } : {}) },
          ExpressionAttributeValues: {
            ':status': outcome.status,
            ':now': now,
            ':running': 'running',
            ...(outcome.summary ? { ':summary': outcome.summary } : {}),
            ...(outcome.error ? { ':error': outcome.error } : {}),
          },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
  }
}
