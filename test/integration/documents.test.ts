/**
 * Items as plain objects over the low-level DynamoDB client, on the emulator, through a client that
 * keeps its resolved middleware (as every function's does): each request carries its own input,
 * values come back as they went in, and a query's pages continue where the last one stopped.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Documents } from '../../functions/adapters/dynamo/documents.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { useLocalAws } from '../support/local-aws.js';

const aws = useLocalAws();
let n = 0;
const partition = (name: string) => `test#documents-${name}-${Date.now()}-${n++}`;

function documents() {
  const { dynamo } = awsClients(readEnv(aws.env));
  expect(dynamo.config.cacheMiddleware).toBe(true);
  return { doc: new Documents(dynamo), table: aws.emulators.table };
}

describe('Documents', () => {
  it('writes and reads back what it was given, each request its own input through one cached stack', async () => {
    const { doc, table } = documents();
    const pk = partition('roundtrip');
    const value = fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), value, { maxKeys: 4 }), { minLength: 2, maxLength: 4 }), async (bodies) => {
        // Written one after another, then read one after another: a stack kept from the first
        // request must not carry its input into the next ones.
        const items = bodies.map((body, i) => ({ ...body, pk, sk: `item#${i}` }));
        for (const item of items) await doc.put({ TableName: table, Item: item });
        for (const item of items) expect((await doc.get({ TableName: table, Key: { pk, sk: item.sk }, ConsistentRead: true })).Item).toEqual(item);
      }),
      { numRuns: 15 },
    );
  });

  it('leaves out attributes without a value, and reads nothing as no Item', async () => {
    const { doc, table } = documents();
    const pk = partition('undefined');
    await doc.put({ TableName: table, Item: { pk, sk: 'a', kept: 1, dropped: undefined } });
    expect((await doc.get({ TableName: table, Key: { pk, sk: 'a' }, ConsistentRead: true })).Item).toEqual({ pk, sk: 'a', kept: 1 });
    expect(await doc.get({ TableName: table, Key: { pk, sk: 'missing' }, ConsistentRead: true })).toEqual({});
  });

  it('answers a conditional write that finds its item with the SDK’s ConditionalCheckFailedException', async () => {
    const { doc, table } = documents();
    const pk = partition('condition');
    await doc.put({ TableName: table, Item: { pk, sk: 'a', v: 1 }, ConditionExpression: 'attribute_not_exists(pk)' });
    await expect(doc.put({ TableName: table, Item: { pk, sk: 'a', v: 2 }, ConditionExpression: 'attribute_not_exists(pk)' })).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect((await doc.get({ TableName: table, Key: { pk, sk: 'a' }, ConsistentRead: true })).Item).toEqual({ pk, sk: 'a', v: 1 });
  });

  it('returns an update’s new values as plain values', async () => {
    const { doc, table } = documents();
    const pk = partition('update');
    await doc.put({ TableName: table, Item: { pk, sk: 'a', count: 1, tags: new Set(['x']) } });
    const out = await doc.update({
      TableName: table,
      Key: { pk, sk: 'a' },
      UpdateExpression: 'ADD #count :n, tags :t SET note = :note',
      ExpressionAttributeNames: { '#count': 'count' },
      ExpressionAttributeValues: { ':n': 2, ':t': new Set(['y']), ':note': { by: 'test', at: [1, 2] } },
      ReturnValues: 'UPDATED_NEW',
    });
    expect(out.Attributes).toEqual({ count: 3, tags: new Set(['x', 'y']), note: { by: 'test', at: [1, 2] } });
  });

  it('reads a query page by page, each continuing from the key the last one ended at', async () => {
    const { doc, table } = documents();
    const pk = partition('pages');
    for (let i = 0; i < 5; i++) await doc.put({ TableName: table, Item: { pk, sk: `m#${i}`, i } });
    const query = { TableName: table, KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to', ExpressionAttributeValues: { ':pk': pk, ':from': 'm#1', ':to': 'm#~' }, Limit: 2, ConsistentRead: true };

    const seen: number[] = [];
    let pages = 0;
    for await (const page of doc.pages(query)) {
      pages++;
      seen.push(...page.Items.map((item) => Number(item.i)));
    }
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(pages).toBeGreaterThanOrEqual(2);

    const first = await doc.query(query);
    expect(first.Items.map((item) => item.i)).toEqual([1, 2]);
    expect(first.LastEvaluatedKey).toEqual({ pk, sk: 'm#2' });
    const next = await doc.query({ ...query, ExclusiveStartKey: first.LastEvaluatedKey });
    expect(next.Items.map((item) => item.i)).toEqual([3, 4]);
  });

  it('abandons a request when its signal is aborted', async () => {
    const { doc, table } = documents();
    const signal = AbortSignal.abort(new Error('stop'));
    await expect(doc.put({ TableName: table, Item: { pk: partition('abort'), sk: 'a' } }, { abortSignal: signal })).rejects.toThrow();
  });
});
