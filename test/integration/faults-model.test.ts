/**
 * Faults of the model and of Lambda, through the synthesized state machines: the run recovers
 * from transient ones, fails with a named error after a bounded number of attempts when the
 * model stays down, and never duplicates a message, a model call or a tool run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import type { Reply } from '../../local/stand-ins/messages-api.js';
import type { LocalHandler } from '../../local/runtime/runtime.js';
import { awsClients, readEnv, wire } from '../../functions/wiring/wire.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';
import { DynamoDBClient, ProvisionedThroughputExceededException, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';

/**
 * Steps to crash once after they have done their work (a Lambda dying before it returns), by
 * iteration or tool call id; armed before the run starts, so none runs before it is armed.
 */
const crashAfter = new Set<string>();
const crashes: string[] = [];
function crashOnce(name: string, handler: LocalHandler): LocalHandler {
  return async (event) => {
    const result = await handler(event);
    const key = `${name}:${JSON.stringify(event)}`;
    const e = event as { runId: string; iteration?: number; toolUseId?: string };
    const target = `${name}:${e.toolUseId ?? e.iteration}`;
    if (crashAfter.has(target) && !crashes.includes(key)) {
      crashes.push(key);
      throw Object.assign(new Error('Runtime exited before returning'), { name: 'Lambda.Unknown' });
    }
    return result;
  };
}

const local = useLocalStack({ STEPWISE_MODEL_TIMEOUT_MS: '400' }, { wrapHandler: crashOnce });

const ok = (text: string): Reply => ({ turn: say(text) });

describe('model faults', () => {
  it.each<[string, Reply]>([
    ['429 with retry-after', { status: 429, type: 'rate_limit_error', message: 'slow down', headers: { 'retry-after': '1' } }],
    ['529 overloaded', { status: 529, type: 'overloaded_error', message: 'Overloaded' }],
    ['500', { status: 500, type: 'api_error', message: 'Internal error' }],
    ['a dropped connection', { drop: true }],
    ['an answer slower than the call budget', { turn: say('too late'), delayMs: 1_500 }],
  ])('recovers from %s: retried by the state machine, the run succeeds', async (name, fault) => {
    const tag = local.book.add(`fault-${name.replace(/\W+/g, '-')}`, fault, fault, fault, ok('recovered'));
    const run = await local.run(`${tag} Survive.`);
    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'recovered' }, iterations: { single: 1 } });
  }, 30_000);

  it('fails with ModelUnavailable after a bounded number of attempts when the model stays down', async () => {
    const down: Reply = { status: 503, type: 'api_error', message: 'Service unavailable' };
    const tag = local.book.respondWith('down', () => down);
    const run = await local.run(`${tag} Never answered.`);

    expect(run).toMatchObject({ status: 'failed', phase: 'failed', error: { code: 'ModelUnavailable', agent: 'single' } });
    // 7 state attempts (1 + 6 retries) × 2 HTTP requests each (the SDK retries once).
    expect(local.book.requests.get('down')).toHaveLength(14);
  }, 30_000);
});

describe('model output faults', () => {
  it('fails a refused turn with ModelRefused and runs none of its tools', async () => {
    const tag = local.book.add('refusal', { turn: { ...use(['toolu_1', 'write_file', { path: 'x.txt', content: 'x' }]), stopReason: 'refusal' } });
    const run = await local.run(`${tag} Something refused.`);
    expect(run).toMatchObject({ status: 'failed', error: { code: 'ModelRefused', agent: 'single' } });
    expect((await local.get(`/runs/${run.runId}/files`)).body.items).toEqual([]);
  });

  it('never runs a tool call cut off by max_tokens, and the loop goes on', async () => {
    const tag = local.book.add(
      'max-tokens',
      // A complete-looking input: only the stop reason says the call was cut off.
      { turn: { ...use(['toolu_cut', 'write_file', { path: 'big.txt', content: 'the first part of a very long' }]), stopReason: 'max_tokens' } },
      ok('I will write it in smaller parts next time.'),
    );
    const run = await local.run(`${tag} Write a huge file.`);
    expect(run).toMatchObject({ status: 'succeeded', iterations: { single: 2 } });
    expect((await local.get(`/runs/${run.runId}/files`)).body.items).toEqual([]);
    const answer = local.book.requests.get('max-tokens')?.[1]?.messages.at(-1)?.content as { tool_use_id: string; is_error: boolean }[];
    expect(answer).toMatchObject([{ tool_use_id: 'toolu_cut', is_error: true, content: expect.stringContaining('max_tokens') }]);
  });

  it('retries an empty answer instead of storing it', async () => {
    const tag = local.book.add('empty', { turn: { content: [] } }, ok('second try'));
    const run = await local.run(`${tag} Answer.`);
    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'second try' } });
    const { messages } = await wire(process.env).conversations.load(conversationIdOf(run.runId, 'single'));
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });
});

describe('a Lambda that dies after its write, before it returns', () => {
  it('is retried without a duplicate message, a second model call or a second tool run', async () => {
    const tag = local.book.add(
      'crash',
      { turn: use(['toolu_1', 'write_file', { path: 'once.txt', content: 'once' }]) },
      ok('done'),
    );
    for (const target of ['inference:0', 'tool:toolu_1', 'inference:1']) crashAfter.add(target);
    const started = await local.post('/runs', { goal: `${tag} Write once.`, mode: 'single' });
    const runId = String(started.body.runId);
    const run = await local.waitFor(runId).finally(() => crashAfter.clear());

    expect(run).toMatchObject({ status: 'succeeded', iterations: { single: 2 } });
    expect(crashes.filter((c) => c.includes(runId))).toHaveLength(3);
    expect(local.book.requests.get('crash')).toHaveLength(2);
    const { dynamo } = awsClients(readEnv(process.env));
    const items = await dynamo.send(
      new QueryCommand({
        TableName: process.env.STEPWISE_TABLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: `conv#${conversationIdOf(runId, 'single')}` } },
      }),
    );
    expect(items.Items?.map((i) => i.sk?.S)).toEqual(['m#0000000000', 'm#0000000001', 'm#0000000001#r#0000', 'm#0000000002', 'm#0000000003']);
    expect(run.usage.outputTokens).toBeGreaterThan(0);
  }, 30_000);
});

describe('a throttled write of a step', () => {
  const send = DynamoDBClient.prototype.send;
  afterEach(() => {
    DynamoDBClient.prototype.send = send;
  });

  it('is retried by the state machine, as an index that throttles the table would make it: the run succeeds, its answer asked for and stored once', async () => {
    const tag = local.book.add('throttled', { turn: use(['toolu_t', 'calculator', { operation: 'add', a: 1, b: 2 }]) }, ok('3'));
    // The step's count of its call, refused once as DynamoDB refuses a write whose index partition
    // cannot take it (after the SDK's own attempts); every other request reaches the emulator.
    const throttled: string[] = [];
    DynamoDBClient.prototype.send = function (this: DynamoDBClient, command: unknown, ...rest: unknown[]) {
      const input = (command as { input?: { UpdateExpression?: string; Key?: { pk?: { S?: string } } } }).input;
      const runKey = input?.Key?.pk?.S ?? '';
      if (command instanceof UpdateItemCommand && input?.UpdateExpression?.includes('SET #counted') && !throttled.includes(runKey) && runKey.includes('throttled-')) {
        throttled.push(runKey);
        return Promise.reject(new ProvisionedThroughputExceededException({ message: 'Throughput exceeds the current capacity for one or more global secondary indexes.', $metadata: { httpStatusCode: 400 } }));
      }
      return (send as (...args: unknown[]) => Promise<unknown>).call(this, command, ...rest);
    } as typeof send;
    const runId = `throttled-${Date.now()}`;
    const started = await local.post('/_local/events', { Source: 'faults.test', DetailType: 'Stepwise Run Requested', Detail: { goal: `${tag} Add.`, mode: 'single', runId } });
    expect(started.status).toBe(200);
    const run = await local.waitFor(runId);

    expect(throttled).toEqual([`run#${runId}`]);
    expect(run).toMatchObject({ status: 'succeeded', result: { response: '3' }, iterations: { single: 2 } });
    // The retried step took its stored answer: no second model call, no second message.
    expect(local.book.requests.get('throttled')).toHaveLength(2);
    const { messages } = await wire(process.env).conversations.load(conversationIdOf(runId, 'single'));
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  }, 30_000);
});
