/**
 * `GET /runs` on DynamoDB: a page of one run index, then the live figures of the page's running
 * runs from their own records.
 *
 * The indexes hold a run's cost and `updatedAt` as of its last status change (its start, a phase,
 * its end), so that a step writes no owner's or tenant's index partition (docs/SCALE.md, "Hot
 * partitions"). A page's running runs are read once more, in one BatchGetItem of their records
 * (each its own partition), for the cost and time of their latest step. Eventually consistent,
 * as the index is: a figure may lag the last step by a moment. Ended runs need no second read:
 * their end copied the cost.
 */
import type { Documents } from './documents.js';
import type { RunPage, RunQuery } from '../../core/runs/types.js';
import { guard } from '../aws/errors.js';
import { progressAttributes, runIndexes } from './layout.js';
import { decodeCursor, encodeCursor, indexFor, key, latestOf } from './run-items.js';

type ListedRun = RunPage['items'][number];

/** One page of a listing, newest first, with the live cost and step time of its running runs. */
export async function listRuns(doc: Documents, table: string, query: RunQuery): Promise<RunPage> {
  const { index, partition } = indexFor(query);
  const filter = query.status !== undefined && index !== runIndexes.running;
  const out = await guard('Listing runs', () =>
    doc.query({
      TableName: table,
      IndexName: index.name,
      KeyConditionExpression: '#pk = :pk',
      ...(filter ? { FilterExpression: '#status = :status' } : {}),
      ExpressionAttributeNames: { '#pk': index.partitionKey, ...(filter ? { '#status': 'status' } : {}) },
      ExpressionAttributeValues: { ':pk': partition, ...(filter ? { ':status': query.status } : {}) },
      ScanIndexForward: false,
      Limit: query.limit,
      ...(query.cursor ? { ExclusiveStartKey: decodeCursor(query.cursor, index.partitionKey, partition) } : {}),
    }),
  );
  const items = out.Items.map(
    (item): ListedRun =>
      ({
        runId: String(item.runId),
        mode: item.mode,
        goal: String(item.goalPreview ?? ''),
        status: item.status,
        phase: item.phase,
        createdAt: String(item.createdAt),
        updatedAt: String(item.updatedAt),
        estimatedCostUsd: typeof item.estimatedCostUsd === 'number' ? item.estimatedCostUsd : 0,
        ...(item.approvals ? { approvals: item.approvals } : {}),
        ...(item.owner ? { owner: item.owner } : {}),
      }) as ListedRun,
  );
  const live = await liveFigures(doc, table, items.filter((item) => item.status === 'running').map((item) => item.runId));
  return {
    items: items.map((item) => withLive(item, live.get(item.runId))),
    ...(out.LastEvaluatedKey ? { nextCursor: encodeCursor(out.LastEvaluatedKey) } : {}),
  };
}

interface LiveFigures {
  cost?: number;
  steppedAt?: string;
}

/** The live cost and latest step time of each run, from its record (at most 100 runs: a page). */
async function liveFigures(doc: Documents, table: string, runIds: string[]): Promise<Map<string, LiveFigures>> {
  if (runIds.length === 0) return new Map();
  const records = await guard('Reading the running runs of a listing', () =>
    doc.batchGet({
      TableName: table,
      Keys: runIds.map(key),
      ProjectionExpression: 'runId, #cost, #stepped',
      ExpressionAttributeNames: { '#cost': progressAttributes.cost, '#stepped': progressAttributes.steppedAt },
    }),
  );
  return new Map(
    records.map((record) => [
      String(record.runId),
      {
        ...(typeof record[progressAttributes.cost] === 'number' ? { cost: record[progressAttributes.cost] as number } : {}),
        ...(typeof record[progressAttributes.steppedAt] === 'string' ? { steppedAt: record[progressAttributes.steppedAt] as string } : {}),
      },
    ]),
  );
}

/** A listed run with its live figures, where they are newer (a run left out of the read keeps the index's). */
export function withLive(item: ListedRun, live: LiveFigures | undefined): ListedRun {
  if (!live) return item;
  return {
    ...item,
    estimatedCostUsd: Math.max(item.estimatedCostUsd, live.cost ?? 0),
    updatedAt: latestOf(item.updatedAt, live.steppedAt) ?? item.updatedAt,
  };
}
