/**
 * The API's fuzz against the real DynamoDB and S3 emulators: a key or value the service itself
 * refuses (a 3,000-character run id, an over-long idempotency key, a file path whose key is over
 * S3's 1,024 bytes) shows up here as the 500 it
 * would be deployed, where the in-memory stores accept anything. Never a 5xx; a refusal writes nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SFNClient } from '@aws-sdk/client-sfn';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { createApi } from '../../functions/api/app.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { SfnTaskTokens } from '../../functions/adapters/aws/task-tokens.js';
import { RecordingStarter, as, testCallers } from '../support/api.js';
import { useLocalAws } from '../support/local-aws.js';

const aws = useLocalAws();

/** A file path under 1,024 bytes whose S3 key, with the run's prefix, is over (segments kept short for the emulator's file system). */
const keyTooLong = Array.from({ length: 1020 }, (_, i) => (i % 100 === 99 ? '/' : 'a')).join('');

const nasty = fc.oneof(
  fc.string(),
  fc.constantFrom('..', '%2e%2e%2f', '%00', '\u0000', 'a'.repeat(3000), 'x'.repeat(81), '', ' ', '%', '%ZZ', '☃', 'run-1', 'ｆｉｌｅ', keyTooLong),
);

/**
 * Everything the table holds, as one string: a refused request must leave it as it was. (Counting
 * write requests would not do: a conditional write that fails, as a busy session's lock does, is
 * a request that changes nothing.)
 */
async function tableContents(): Promise<string> {
  const { dynamo } = awsClients(readEnv(aws.env));
  const items: unknown[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(new ScanCommand({ TableName: aws.env.STEPWISE_TABLE, ConsistentRead: true, ExclusiveStartKey: start as never }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  dynamo.destroy();
  return JSON.stringify(items.map((item) => JSON.stringify(item)).sort());
}

describe('every route on the real stores', () => {
  it('answers 2xx or 4xx, never 5xx, and a refusal writes nothing', async () => {
    const wiring = aws.wiring();
    const starter = new RecordingStarter();
    const app = createApi({
      ...wiring,
      starter,
      newId: () => `run-${starter.started.length + 1}`,
      authenticate: testCallers,
      // Never called: no fuzzed request reaches a waiting loop.
      tokens: new SfnTaskTokens(new SFNClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9' })),
    });
    const seed = await app.request('/runs', { method: 'POST', body: JSON.stringify({ goal: 'seed', mode: 'single' }), headers: { 'content-type': 'application/json' } });
    expect(seed.status).toBe(202);
    const caller = fc.constantFrom({}, as('alice', { tenant: 'acme' }), as('rita', { tenant: 'acme', scopes: ['approve'] }));
    const request = fc.oneof(
      fc.record({ method: fc.constantFrom('GET', 'POST'), path: nasty.map((p) => `/runs/${encodeURIComponent(p)}`) }),
      fc.record({ method: fc.constant('GET'), path: fc.tuple(fc.constantFrom('run-1', 'nope'), nasty).map(([id, p]) => `/runs/${id}/files/${encodeURIComponent(p)}`) }),
      fc.record({ method: fc.constant('GET'), path: nasty.map((id) => `/runs/${encodeURIComponent(id)}/messages`) }),
      fc.record({ method: fc.constant('POST'), path: nasty.map((p) => `/runs/${encodeURIComponent(p)}/cancel`) }),
      fc.record({
        method: fc.constant('POST'),
        path: fc.tuple(fc.constantFrom('run-1', 'nope'), nasty).map(([id, p]) => `/runs/${id}/approvals/${encodeURIComponent(p)}`),
        body: fc.constantFrom('{"decision":"approve"}', '{"decision":"deny","reason":"no"}'),
      }),
      fc.record({ method: fc.constant('GET'), path: fc.dictionary(fc.constantFrom('status', 'limit', 'cursor', 'scope'), nasty).map((q) => `/runs?${new URLSearchParams(q)}`) }),
      fc.record({
        method: fc.constant('POST'),
        path: fc.constant('/runs'),
        body: fc.record({ goal: fc.constantFrom('hi', 'x'.repeat(40_000)), mode: fc.constant('single'), sessionId: nasty }, { requiredKeys: ['goal'] }).map((b) => JSON.stringify(b)),
        key: nasty,
      }),
    );
    await fc.assert(
      fc.asyncProperty(request, caller, async (r, who) => {
        const before = await tableContents();
        const headers: Record<string, string> = { ...who, ...('body' in r ? { 'content-type': 'application/json' } : {}) };
        if ('key' in r && /^[\x21-\x7e]*$/.test(r.key)) headers['idempotency-key'] = r.key;
        let res: Response;
        try {
          res = await app.request(r.path, { method: r.method, headers, ...('body' in r ? { body: r.body } : {}) });
        } catch {
          // A path the URL parser itself refuses never reaches a route.
          return;
        }
        expect({ path: r.path.slice(0, 80), status: res.status < 500 ? 'ok' : `${res.status} ${await res.text()}` }).toEqual({ path: r.path.slice(0, 80), status: 'ok' });
        // Refused input, an unknown caller or a run it may not see change nothing. (A 409 may leave
        // bookkeeping behind by design: an idempotency claim made before a busy session was found.)
        if ([400, 401, 403, 404].includes(res.status)) expect(await tableContents()).toBe(before);
      }),
      // The owner asks for a file whose key would be too long: always tried, not left to chance.
      { numRuns: 300, examples: [[{ method: 'GET', path: `/runs/run-1/files/${encodeURIComponent(keyTooLong)}` }, {}]] },
    );
  }, 180_000);
});
