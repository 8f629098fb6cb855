/**
 * No hot partition by design (docs/SCALE.md, "Hot partitions"): what a step writes stays in its
 * run's own partition, and the load simulation's partition accounting that measures it.
 */
import { type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { Documents } from '../../functions/adapters/dynamo/documents.js';
import { DynamoRunStore } from '../../functions/adapters/dynamo/runs.js';
import type { BlobStore } from '../../functions/adapters/s3/blobs.js';
import { IndexWrites, busiestPartitions, indexedOf, writtenAttributes } from '../bench/partitions.js';

/** A DynamoDB client that records each command and answers as if it succeeded with nothing to return. */
function recordingStore() {
  const sent: { name: string; input: Record<string, unknown> }[] = [];
  const client = {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      sent.push({ name: command.constructor.name, input: command.input });
      return {};
    },
  } as unknown as DynamoDBClient;
  const runs = new DynamoRunStore({ doc: new Documents(client), table: 'stepwise', blobs: {} as BlobStore, clock: () => new Date('2026-03-01T10:00:00Z') });
  /** The attributes each UpdateItem sent so far writes, that a run index holds. */
  const indexed = () =>
    sent.splice(0).map(({ name, input }) => {
      expect(name).toBe(UpdateItemCommand.name);
      return indexedOf(writtenAttributes(String(input.UpdateExpression), input.ExpressionAttributeNames as Record<string, string>));
    });
  return { runs, indexed };
}

const usage = { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 1, cacheCreationInputTokens: 2 };

describe('what a step writes to its run record', () => {
  it('names no attribute a run index holds, in any of its forms: a step, a summary, an answer, a hand-over, a child roll-up, a plan', async () => {
    const { runs, indexed } = recordingStore();
    await runs.recordStep('run-1', 'single', 0, { usage, costUsd: 0.1 });
    await runs.recordStep('run-1', 'single', 1, { usage, costUsd: 0.1, call: 'summary', day: '2026-03-01', withChildren: true });
    await runs.recordStep('run-1', 'single', 1, { usage, costUsd: 0.1, result: { response: 'done', actionsTaken: [] } });
    await runs.recordStep('run-1', 'architect', 2, { usage, costUsd: 0.1, result: { response: 'plan', actionsTaken: [] }, handsOver: true });
    await runs.rollUp('run-1', 'toolu_1', { usage, estimatedCostUsd: 0.2 });
    await runs.savePlan('run-1', { goal: 'g', steps: [{ description: 'd', action: 'a' }] });
    expect(indexed()).toEqual([[], [], [], [], [], []]);
  });

  it('leaves the listed cost and time to the status changes, each of which catches the cost up', async () => {
    const { runs, indexed } = recordingStore();
    await runs.finish('run-1', { status: 'succeeded', phase: 'complete' });
    await runs.cancel('run-2');
    await runs.failIfRunning('run-3', { code: 'ExecutionAborted', message: 'Stopped.' });
    // Each one is a write to the run's index partitions anyway (status, phase, time); the cost rides along.
    const statusChange = ['status', 'phase', 'updatedAt', 'estimatedCostUsd', 'runningKey'];
    expect(indexed()).toEqual([statusChange, statusChange, statusChange]);
  });
});

describe('the load simulation’s partition accounting', () => {
  it('reads the targets of every clause of an update expression, names resolved, functions and values not taken for targets', () => {
    expect(
      writtenAttributes('SET #c = :m, iterations.#a = :i, liveCostUsd = if_not_exists(liveCostUsd, estimatedCostUsd) + :cost ADD inputTokens :in, #by.#a.x :in REMOVE currentAgent, runningKey', {
        '#c': 'counted#single',
        '#a': 'single',
        '#by': 'usageByAgent',
      }),
    ).toEqual(['counted#single', 'iterations', 'liveCostUsd', 'inputTokens', 'usageByAgent', 'currentAgent', 'runningKey']);
  });

  it('counts a write in an index partition when a run starts, when a listed attribute changes, and when it leaves the running runs; never for a step', () => {
    const writes = new IndexWrites();
    const S = (s: string) => ({ S: s });
    const start = { pk: S('run#r1'), sk: S('run'), ownerKey: S('owner#o'), tenantKey: S('tenant#t'), runningKey: S('running#o'), listKey: S('2026#r1') };
    expect(writes.writes({ operation: 'PutItem', body: JSON.stringify({ Item: start }), ok: true })).toEqual([
      { where: 'table', partition: 'run#r1' },
      { where: 'runs-by-owner', partition: 'owner#o', kind: 'lifecycle' },
      { where: 'runs-by-tenant', partition: 'tenant#t', kind: 'lifecycle' },
      { where: 'running-by-owner', partition: 'running#o', kind: 'lifecycle' },
    ]);
    const update = (expression: string, ok = true) =>
      writes.writes({ operation: 'UpdateItem', body: JSON.stringify({ Key: { pk: S('run#r1'), sk: S('run') }, UpdateExpression: expression }), ok });
    expect(update('SET liveCostUsd = if_not_exists(liveCostUsd, estimatedCostUsd) + :c, steppedAt = :now ADD inputTokens :in')).toEqual([{ where: 'table', partition: 'run#r1' }]);
    // A step as it was before: the cost and time it wrote are listed, so all three indexes are written.
    expect(update('ADD estimatedCostUsd :c SET updatedAt = :now').map((w) => `${w.where} ${w.kind ?? ''}`.trim())).toEqual(['table', 'runs-by-owner step', 'runs-by-tenant step', 'running-by-owner step']);
    // A refused condition writes no index.
    expect(update('SET status = :s', false)).toEqual([{ where: 'table', partition: 'run#r1' }]);
    expect(update('SET status = :s REMOVE runningKey').map((w) => `${w.where} ${w.kind ?? ''}`.trim())).toEqual(['table', 'runs-by-owner lifecycle', 'runs-by-tenant lifecycle', 'running-by-owner lifecycle']);
    expect(update('SET phase = :p').map((w) => w.where)).toEqual(['table', 'runs-by-owner', 'runs-by-tenant']);
    expect(writes.writes({ operation: 'Query', body: '{}', ok: true })).toEqual([]);
  });

  it('finds the busiest partition of each place and its busiest second', () => {
    const at = (where: string, partition: string, ms: number, kind?: 'lifecycle' | 'step') => ({ where, partition, at: ms, ...(kind ? { kind } : {}) });
    expect(busiestPartitions([at('table', 'a', 0), at('table', 'b', 10), at('table', 'b', 1500), at('idx', 't', 100, 'step'), at('idx', 't', 200, 'lifecycle')])).toEqual([
      { where: 'table', partition: 'b', writes: 2, lifecycle: 0, step: 0, peakPerSecond: 1 },
      { where: 'idx', partition: 't', writes: 2, lifecycle: 1, step: 1, peakPerSecond: 2 },
    ]);
  });
});
