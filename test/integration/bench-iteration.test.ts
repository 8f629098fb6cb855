import { describe, expect, it } from 'vitest';
import type { ModelProvider } from '../../functions/core/model/types.js';
import { IterationProfile, type Service, dynamoTarget, orchestrator, phasesOf, requestKinds, s3Target } from '../bench/iteration.js';
import { requestsReport, why } from '../bench/requests.js';
import { useLocalAws } from '../support/local-aws.js';

const aws = useLocalAws();

describe('dynamoTarget', () => {
  it('names the item family and the shape of the sort key or its condition', () => {
    expect(dynamoTarget(JSON.stringify({ TableName: 't', Key: { pk: { S: 'run#r-1' }, sk: { S: 'run' } } }))).toBe('run# run');
    expect(dynamoTarget(JSON.stringify({ Item: { pk: { S: 'conv#run/r-1/single' }, sk: { S: 'm#0000000003#r#0000' } } }))).toBe('conv# m#<n>#r#<n>');
    expect(
      dynamoTarget(
        JSON.stringify({
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': { S: 'conv#run/r-1/single' }, ':from': { S: 'm#0000000012' }, ':to': { S: 'm#~' } },
        }),
      ),
    ).toBe('conv# sk BETWEEN m#<n> AND m#~');
    expect(
      dynamoTarget(JSON.stringify({ IndexName: 'runs-by-owner', KeyConditionExpression: '#pk = :pk', ExpressionAttributeValues: { ':pk': { S: 'owner#local' } } })),
    ).toBe('owner# index runs-by-owner');
  });
});

describe('s3Target', () => {
  it('names the operation and the key prefix of a path-style request', () => {
    expect(s3Target('GET', '/bucket/workspaces/r-1/notes/a.txt')).toEqual({ operation: 'GetObject', family: 'workspaces/' });
    expect(s3Target('PUT', '/bucket/conversations/run%2Fr-1/m%230-abc.json?x-id=PutObject')).toEqual({ operation: 'PutObject', family: 'conversations/' });
    expect(s3Target('GET', '/bucket?list-type=2&prefix=workspaces%2Fr-1%2F')).toEqual({ operation: 'ListObjectsV2', family: 'workspaces/' });
  });
});

describe('phasesOf', () => {
  it('splits each iteration into phases that add up to its wall time', () => {
    const profile = new IterationProfile({ dynamo: () => undefined, s3: () => undefined });
    const request = (fn: string, service: Service, start: number, end: number) =>
      ({ fn, service, operation: 'x', family: 'y', start, end, sent: 0, received: 0 });
    // Two iterations of 10 ms: inference 0–5 (DynamoDB 1–3, model 3–4), tool 6–9 (S3 7–8), then again.
    for (const at of [0, 10]) {
      profile.invocations.push({ fn: 'inference', start: at, end: at + 5 }, { fn: 'tool', start: at + 6, end: at + 9 });
      profile.requests.push(request('inference', 'DynamoDB', at + 1, at + 3), request('tool', 'S3', at + 7, at + 8));
      profile.modelCalls.push({ start: at + 3, end: at + 4 });
    }
    profile.invocations.push({ fn: 'inference', start: 20, end: 25 });
    // An orchestrator request between states is no handler's time, and not the interpreter's.
    profile.requests.push(request(orchestrator, 'DynamoDB', 9.5, 9.75));

    const { iterations, wallMs, phases } = phasesOf(profile);
    expect({ iterations, wallMs }).toEqual({ iterations: 2, wallMs: 10 });
    expect(Object.fromEntries(phases.map(({ phase, ms }) => [phase.split(' (')[0], ms]))).toEqual({
      interpreter: 1.875,
      'Lambda invoke: inference': 2,
      'Lambda invoke: tool': 2,
      'DynamoDB requests': 2.125,
      'S3 requests': 1,
      'model client': 1,
    });
  });
});

describe('IterationProfile', () => {
  it('attributes each emulator request to the function that made it, with its operation and item family', async () => {
    const profile = new IterationProfile({ dynamo: () => aws.emulators.dynamoEndpoint, s3: () => aws.emulators.s3Endpoint });
    const model: Pick<ModelProvider, 'generate'> = { generate: () => Promise.reject(new Error('not called')) };
    profile.attach(model);
    try {
      const { runs, conversations, workspaceFor } = aws.wiring();
      await profile.wrapHandler('inference', async () => runs.get('r-1'))({});
      await profile.wrapHandler('tool', async () => workspaceFor('r-1').write('a.txt', new TextEncoder().encode('a')))({});
      await profile.aroundApi(() => conversations.load('run/r-1/single'));
      await runs.get('r-2');

      expect(requestKinds(profile).map(({ fn, service, operation, family, count }) => ({ fn, service, operation, family, count }))).toEqual([
        { fn: 'api', service: 'DynamoDB', operation: 'Query', family: 'conv# sk BETWEEN m# AND m#~', count: 1 },
        { fn: 'inference', service: 'DynamoDB', operation: 'GetItem', family: 'run# run', count: 1 },
        { fn: orchestrator, service: 'DynamoDB', operation: 'GetItem', family: 'run# run', count: 1 },
        { fn: 'tool', service: 'S3', operation: 'PutObject', family: 'workspaces/', count: 1 },
      ]);
    } finally {
      profile.close();
    }
  });
});

describe('requestsReport', () => {
  it('prints each kind of request with its reason, and UNEXPLAINED for one without', () => {
    const kind = { service: 'DynamoDB' as const, count: 200, ms: 1, sent: 10, received: 20 };
    const report = requestsReport(
      [
        { ...kind, fn: 'tool', operation: 'PutItem', family: 'conv# m#<n>#r#<n>' },
        { ...kind, fn: 'tool', operation: 'Scan', family: 'conv#' },
      ],
      200,
    );
    expect(report).toContain(`| tool | DynamoDB PutItem | \`conv# m#<n>#r#<n>\` | 200 | 1.00 | 1.00 | 10 / 20 | ${why['tool PutItem conv# m#<n>#r#<n>']} |`);
    expect(report).toContain('| tool | DynamoDB Scan | `conv#` | 200 | 1.00 | 1.00 | 10 / 20 | **UNEXPLAINED** |');
  });
});
