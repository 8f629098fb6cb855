/** The stores of budgets and structured output on the DynamoDB emulator: the daily spend, and what the run record keeps. */
import { Documents } from '../../functions/adapters/dynamo/documents.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ownerKey } from '../../functions/core/callers/access.js';
import { partition, shardOf, spendShards } from '../../functions/adapters/dynamo/spend.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { newRun } from '../support/memory.js';
import { useLocalAws } from '../support/local-aws.js';

const aws = useLocalAws();
const usage = { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
let n = 0;
const fresh = (name: string) => ({ principal: `iss#${name}-${Date.now()}-${n++}` });

describe('DynamoSpendStore', () => {
  it('sums what an owner’s runs of a day cost, each raised and never lowered, apart from other owners and days', async () => {
    const { spend } = aws.wiring();
    const alice = fresh('alice');
    const bob = fresh('bob');
    await spend.recordRun(alice, '2026-01-01', 'run-a', 0.25);
    await spend.recordRun(alice, '2026-01-01', 'run-a', 0.5);
    await spend.recordRun(alice, '2026-01-01', 'run-a', 0.5);
    // A stale copy (a step retried after a later one) lowers nothing.
    await spend.recordRun(alice, '2026-01-01', 'run-a', 0.3);
    await spend.recordRun(alice, '2026-01-01', 'run-b', 1.25);
    await spend.recordRun(alice, '2026-01-02', 'run-c', 7);
    await spend.recordRun(bob, '2026-01-01', 'run-d', 9);
    expect(await spend.spentOn(alice, '2026-01-01')).toBe(1.75);
    expect(await spend.spentOn(alice, '2026-01-02')).toBe(7);
    expect(await spend.spentOn(alice, '2026-01-03')).toBe(0);
    expect(await spend.spentOn(bob, '2026-01-01')).toBe(9);

    const { dynamo } = awsClients(readEnv(aws.env));
    const pk = `spend#${ownerKey(alice)}#2026-01-01#${shardOf('run-a')}`;
    const { Item } = await new Documents(dynamo).get({ TableName: aws.emulators.table, Key: { pk, sk: 'run#run-a' } });
    // Kept two days past its day, then DynamoDB's TTL may delete it.
    expect(Item).toEqual({ pk, sk: 'run#run-a', usd: 0.5, expiresAt: Date.parse('2026-01-04T00:00:00Z') / 1000 });
  });

  it('spreads one owner’s day over its shards by run, and sums them all', async () => {
    const { spend } = aws.wiring();
    const owner = fresh('busy');
    const runIds = Array.from({ length: 40 }, (_, i) => `run-shard-${i}`);
    await Promise.all(runIds.map((runId) => spend.recordRun(owner, '2026-03-01', runId, 0.25)));
    expect(await spend.spentOn(owner, '2026-03-01')).toBe(10);
    const { dynamo } = awsClients(readEnv(aws.env));
    const doc = new Documents(dynamo);
    const counts = await Promise.all(
      Array.from({ length: spendShards }, async (_, shard) => {
        const { Items } = await doc.query({ TableName: aws.emulators.table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': partition(owner, '2026-03-01', shard) } });
        return Items.length;
      }),
    );
    // Every run's item is in its own shard, and no shard holds the whole day.
    expect(counts.reduce((a, b) => a + b, 0)).toBe(runIds.length);
    expect(Math.max(...counts)).toBeLessThan(runIds.length / 2);
    expect(counts.filter((n) => n > 0).length).toBeGreaterThan(spendShards / 2);
  });

  it('ends at the largest cost it was told, in any order and with any repeats', async () => {
    const { spend } = aws.wiring();
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 10_000 }), { minLength: 1, maxLength: 8 }), async (cents) => {
        const owner = fresh('p');
        for (const c of cents) await spend.recordRun(owner, '2026-02-01', 'run-x', c / 100);
        expect(await spend.spentOn(owner, '2026-02-01')).toBe(Math.max(...cents) / 100);
      }),
      { numRuns: 15 },
    );
  });
});

describe('DynamoRunStore, budgets and structured output', () => {
  it('keeps the budget, the output schema byte for byte, and a structured answer nested deeper than DynamoDB maps go', async () => {
    const { runs } = aws.wiring();
    const schema = { type: 'object', required: ['b', 'a'], properties: { b: { type: 'string' }, a: { type: 'object' } }, $defs: {} };
    let deep: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 40; i++) deep = { a: deep };
    await runs.create(newRun('budget-run-1', 'goal', { budget: { maxUsd: 2, maxTokens: 100 }, output: { schema } }));
    await runs.recordStep('budget-run-1', 'single', 0, { usage, costUsd: 0.1, result: { response: 'done', actionsTaken: [], output: { b: 'x', a: deep } } });

    const stored = await runs.get('budget-run-1');
    expect(stored).toMatchObject({ budget: { maxUsd: 2, maxTokens: 100 }, result: { response: 'done', actionsTaken: [], output: { b: 'x', a: deep } } });
    expect(JSON.stringify(stored?.output?.schema)).toBe(JSON.stringify(schema));
  });

  it('counts each call’s cost toward the day it was counted, once, and answers that day’s spend with the totals', async () => {
    const { runs } = aws.wiring();
    await runs.create(newRun('budget-run-days', 'goal', { createdAt: '2026-01-01T23:59:00.000Z' }));
    expect((await runs.recordStep('budget-run-days', 'single', 0, { usage, costUsd: 0.5, day: '2026-01-01' }))?.spentByDay).toEqual({ '2026-01-01': 0.5 });
    expect(await runs.recordStep('budget-run-days', 'single', 0, { usage, costUsd: 0.5, day: '2026-01-02' })).toBeUndefined();
    expect((await runs.recordStep('budget-run-days', 'single', 1, { usage, costUsd: 0.25, day: '2026-01-02' }))?.spentByDay).toEqual({ '2026-01-02': 0.25 });
    await runs.recordStep('budget-run-days', 'single', 2, { usage, costUsd: 0.5, day: '2026-01-02' });
    expect(await runs.get('budget-run-days')).toMatchObject({ estimatedCostUsd: 1.25, spentByDay: { '2026-01-01': 0.5, '2026-01-02': 0.75 } });
  });

  it('counts a step’s summary call and its answer apart, each once', async () => {
    const { runs } = aws.wiring();
    await runs.create(newRun('budget-run-2', 'goal'));
    for (let attempt = 0; attempt < 2; attempt++) {
      await runs.recordStep('budget-run-2', 'single', 3, { usage, costUsd: 0.5, call: 'summary' });
      await runs.recordStep('budget-run-2', 'single', 3, { usage, costUsd: 0.25 });
    }
    expect(await runs.get('budget-run-2')).toMatchObject({ usage: { ...usage, inputTokens: 20, outputTokens: 10 }, estimatedCostUsd: 0.75, iterations: { single: 4 } });
  });
});
