import { Documents } from '../../functions/adapters/dynamo/documents.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { DynamoSessionLocks } from '../../functions/adapters/dynamo/intake.js';
import { DynamoRunSlots, DynamoStreamSlots } from '../../functions/adapters/dynamo/run-slots.js';
import type { NewMessage } from '../../functions/core/conversation/types.js';
import { type ContentBlock, toolResult } from '../../functions/core/model/messages.js';
import { newRun } from '../support/memory.js';
import { useLocalAws } from '../support/local-aws.js';
import { as, memoryApi } from '../support/api.js';

const aws = useLocalAws();
const meta = { runId: 'run-1', iteration: 0 };
let counter = 0;
const freshId = () => `conv-${Date.now()}-${counter++}`;

async function rawItems(conversationId: string) {
  return rawItemsOf(`conv#${conversationId}`);
}

async function rawItemsOf(pk: string) {
  const { dynamo } = awsClients(readEnv(aws.env));
  const doc = new Documents(dynamo);
  const out = await doc.query({
    TableName: aws.emulators.table,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
  });
  return out.Items ?? [];
}

describe('DynamoConversationStore', () => {
  it('keeps the order and content of every message', async () => {
    const { conversations } = aws.wiring();
    const block = fc.oneof(
      fc.record({ type: fc.constant('text' as const), text: fc.string({ unit: 'grapheme', maxLength: 200 }) }),
      fc.record({ type: fc.constant('tool_use' as const), id: fc.stringMatching(/^toolu_[a-z0-9]{1,8}$/), name: fc.constant('calculator'), input: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue()) }),
    );
    const messages = fc.array(fc.record({ role: fc.constantFrom('user' as const, 'assistant' as const), content: fc.array(block, { maxLength: 3 }) }), { minLength: 1, maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(messages, async (list) => {
        const id = freshId();
        for (const [seq, m] of list.entries()) {
          expect(await conversations.append(id, { seq, role: m.role, content: m.content as ContentBlock[], meta })).toBe(true);
        }
        const loaded = await conversations.load(id);
        expect(loaded.messages.map(({ role, content }) => ({ role, content }))).toEqual(JSON.parse(JSON.stringify(list)));
        expect(loaded.messages.map((m) => m.seq)).toEqual(list.map((_, i) => i));
      }),
      { numRuns: 100 },
    );
  });

  it('refuses a second write of the same sequence number and keeps the first', async () => {
    const { conversations } = aws.wiring();
    const id = freshId();
    const first: NewMessage = { seq: 0, role: 'user', content: [{ type: 'text', text: 'first' }], meta };
    expect(await conversations.append(id, first)).toBe(true);
    expect(await conversations.append(id, { ...first, content: [{ type: 'text', text: 'second' }] })).toBe(false);
    expect((await conversations.load(id)).messages).toEqual([{ seq: 0, role: 'user', content: first.content, meta }]);
    expect(await rawItems(id)).toHaveLength(1);
  });

  it('reads only what follows the last message it knows, and sees what other writers added', async () => {
    const reader = aws.wiring().conversations; // a warm Lambda
    const writer = aws.wiring().conversations; // another one, writing
    const id = freshId();
    const step = fc.oneof(fc.constant('append' as const), fc.constant('results' as const), fc.constant('summary' as const), fc.constant('load' as const));
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const conversationId = `${id}-${counter++}`;
        let seq = 0;
        for (const kind of steps) {
          const last = (await writer.load(conversationId)).messages.at(-1);
          if (kind === 'append') {
            const role = last?.role === 'user' ? 'assistant' : 'user';
            const content: ContentBlock[] =
              role === 'assistant' ? [{ type: 'tool_use', id: `toolu_${seq}`, name: 'calculator', input: {} }] : [{ type: 'text', text: `m${seq}` }];
            await writer.append(conversationId, { seq, role, content, meta });
            seq++;
          } else if (kind === 'results' && last?.role === 'assistant') {
            await writer.putResult(conversationId, last.seq, 0, toolResult(`toolu_${last.seq}`, 'ok'));
          } else if (kind === 'summary' && last) {
            const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
            await writer.putCompaction(conversationId, { fromSeq: Math.max(1, last.seq), atSeq: last.seq, summary: `s${last.seq}`, runId: 'r', iteration: 0, usage, model: 'm' });
          } else {
            await reader.load(conversationId);
          }
        }
        const cold = await aws.wiring().conversations.load(conversationId);
        expect(await reader.load(conversationId)).toEqual(cold);
        // The writer keeps what it wrote instead of reading it back, and still sees what a cold read sees.
        expect(await writer.load(conversationId)).toEqual(cold);
      }),
      { numRuns: 40 },
    );

    const long = freshId();
    for (let seq = 0; seq < 60; seq++) {
      await writer.append(long, { seq, role: seq % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: `message ${seq} ${'x'.repeat(500)}` }], meta });
    }
    aws.emulators.requests.reset();
    await reader.load(long);
    const whole = (await aws.emulators.requests.snapshot()).dynamoBytesOut;
    await writer.append(long, { seq: 60, role: 'user', content: [{ type: 'text', text: 'one more' }], meta });
    aws.emulators.requests.reset();
    expect((await reader.load(long)).messages).toHaveLength(61);
    const again = await aws.emulators.requests.snapshot();
    expect(again.dynamo).toEqual({ Query: 1 });
    expect(again.dynamoBytesOut).toBeLessThan(whole / 20);

    // What a store wrote itself it does not read back: an inference step's own user message and
    // answer (5 KB each here) cost nothing on its next load; only another writer's result is read.
    await writer.load(long);
    await writer.append(long, { seq: 61, role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_61', name: 'read_file', input: { path: 'x'.repeat(5_000) } }], meta });
    await reader.putResult(long, 61, 0, toolResult('toolu_61', 'ok'));
    aws.emulators.requests.reset();
    const seen = await writer.load(long);
    expect(seen.pendingResults).toEqual([toolResult('toolu_61', 'ok')]);
    const own = await aws.emulators.requests.snapshot();
    expect(own.dynamo).toEqual({ Query: 1 });
    expect(own.dynamoBytesOut).toBeLessThan(1_000);
  });

  it('forgets what it keeps of a conversation when a write of its finds another writer\'s item in place', async () => {
    const store = aws.wiring().conversations; // a warm Lambda: the next run of a session repairs a call
    const late = aws.wiring().conversations; // a cancelled run's tool step, writing the real result
    const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    const id = freshId();
    await store.append(id, { seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta });
    await store.append(id, { seq: 1, role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'calculator', input: {} }, { type: 'tool_use', id: 'b', name: 'calculator', input: {} }], meta });
    await store.putResult(id, 1, 0, toolResult('a', 'ok'));
    await store.load(id);
    await late.putResult(id, 1, 1, toolResult('b', 'real'));
    // The repair loses: the stored result is the late writer's.
    expect(await store.putResult(id, 1, 1, toolResult('b', 'interrupted', true), { ran: false })).toEqual(toolResult('b', 'real'));
    await store.append(id, { seq: 2, role: 'user', content: [], meta, carries: { seq: 1, count: 2 } });
    await late.putCompaction(id, { fromSeq: 1, atSeq: 2, summary: 'theirs', runId: 'r', iteration: 0, usage, model: 'm' });
    await store.putCompaction(id, { fromSeq: 1, atSeq: 2, summary: 'mine', runId: 'r', iteration: 0, usage, model: 'm' });
    await store.append(id, { seq: 3, role: 'assistant', content: [{ type: 'text', text: 'done' }], meta });
    expect(await store.load(id)).toEqual(await aws.wiring().conversations.load(id));
    expect((await store.load(id)).compaction?.summary).toBe('theirs');
  });

  it('splices stored results into the message that carries them, in call order', async () => {
    const { conversations } = aws.wiring();
    const id = freshId();
    const calls: ContentBlock[] = [
      { type: 'tool_use', id: 'toolu_a', name: 'calculator', input: {} },
      { type: 'tool_use', id: 'toolu_b', name: 'calculator', input: {} },
    ];
    await conversations.append(id, { seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta });
    await conversations.append(id, { seq: 1, role: 'assistant', content: calls, meta });
    await conversations.putResult(id, 1, 1, toolResult('toolu_b', 'B'));
    expect((await conversations.load(id)).pendingResults).toEqual([undefined, toolResult('toolu_b', 'B')]);
    await conversations.putResult(id, 1, 0, toolResult('toolu_a', 'A'));
    // A retried tool step does not replace the stored result.
    expect(await conversations.putResult(id, 1, 0, toolResult('toolu_a', 'other'))).toEqual(toolResult('toolu_a', 'A'));
    await conversations.append(id, { seq: 2, role: 'user', content: [], meta, carries: { seq: 1, count: 2 } });

    const loaded = await conversations.load(id);
    expect(loaded.messages[2]?.content).toEqual([toolResult('toolu_a', 'A'), toolResult('toolu_b', 'B')]);
    expect(loaded.pendingResults).toEqual([]);
    expect(await conversations.loadTurn(id, 1)).toEqual({
      message: { seq: 1, role: 'assistant', content: calls, meta },
      results: [toolResult('toolu_a', 'A'), toolResult('toolu_b', 'B')],
    });
  });

  it('keeps content over 100 KB in S3 and reads it back exactly', async () => {
    const { conversations } = aws.wiring();
    const id = freshId();
    const big = 'é'.repeat(80_000); // 160 KB of UTF-8
    await conversations.append(id, { seq: 0, role: 'user', content: [{ type: 'text', text: big }], meta });
    await conversations.append(id, { seq: 1, role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: {} }], meta });
    await conversations.putResult(id, 1, 0, toolResult('t1', big));

    const items = await rawItems(id);
    expect(items.map((i) => [i.sk, 'bodyRef' in i])).toEqual([
      ['m#0000000000', true],
      ['m#0000000001', false],
      ['m#0000000001#r#0000', true],
    ]);
    for (const item of items) expect(JSON.stringify(item).length).toBeLessThan(10_000);
    expect((await aws.allKeys()).filter((k) => k.startsWith(`conversations/${id}/`))).toHaveLength(2);
    const loaded = await conversations.load(id);
    expect(loaded.messages[0]?.content).toEqual([{ type: 'text', text: big }]);
    expect(loaded.pendingResults).toEqual([toolResult('t1', big)]);
  });

  it('reads a conversation larger than one Query page', async () => {
    const { conversations } = aws.wiring();
    const id = freshId();
    const text = 'x'.repeat(90_000);
    for (let seq = 0; seq < 14; seq++) {
      await conversations.append(id, { seq, role: seq % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: `${seq}:${text}` }], meta });
    }
    const loaded = await conversations.load(id);
    expect(loaded.messages.map((m) => m.seq)).toEqual([...Array(14).keys()]);
    expect(loaded.messages.map((m) => (m.content[0] as { text: string }).text.slice(0, 3))).toEqual(
      [...Array(14).keys()].map((i) => `${i}:x`.slice(0, 3)),
    );
  });
});

describe("a fork's copy of a conversation", () => {
  it('copies the messages, results and summaries before the cut, big bodies by reference, and nothing twice', async () => {
    const { conversations, forks } = aws.wiring();
    const source = freshId();
    const fork = freshId();
    const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    const big = 'é'.repeat(80_000);
    await conversations.append(source, { seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta });
    await conversations.append(source, { seq: 1, role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: {} }], meta });
    await conversations.putResult(source, 1, 0, toolResult('t1', big), { fullOutput: `${big}!` });
    await conversations.append(source, { seq: 2, role: 'user', content: [], meta, carries: { seq: 1, count: 1 } });
    await conversations.append(source, { seq: 3, role: 'assistant', content: [{ type: 'text', text: 'read it' }], meta });
    await conversations.putCompaction(source, { fromSeq: 1, atSeq: 3, summary: 'before the cut', runId: 'run-1', iteration: 1, usage, model: 'm' });
    await conversations.append(source, { seq: 4, role: 'user', content: [{ type: 'text', text: 'next turn' }], meta });
    await conversations.append(source, { seq: 5, role: 'assistant', content: [{ type: 'text', text: 'after the cut' }], meta });
    await conversations.putCompaction(source, { fromSeq: 3, atSeq: 5, summary: 'made after the cut', runId: 'run-1', iteration: 2, usage, model: 'm' });
    const whole = await conversations.load(source);
    // An item of a kind a fork does not know (say, a draft of a message being written) stays the source's.
    const { dynamo } = awsClients(readEnv(aws.env));
    await new Documents(dynamo).put({ TableName: aws.emulators.table, Item: { pk: `conv#${source}`, sk: 'm#0000000003#draft', body: '"x"' } });
    const sourceItems = await rawItems(source);
    const blobs = (await aws.allKeys()).filter((k) => k.startsWith('conversations/')).length;

    expect(await forks.conversation(source, fork, 4)).toBe(6);
    expect(await conversations.load(fork)).toEqual({
      messages: whole.messages.filter((m) => m.seq < 4),
      pendingResults: [],
      compaction: { fromSeq: 1, atSeq: 3, summary: 'before the cut', runId: 'run-1', iteration: 1, usage, model: 'm' },
    });
    const copied = await rawItems(fork);
    expect(copied.map((i) => i.sk)).toEqual(['m#0000000000', 'm#0000000001', 'm#0000000001#r#0000', 'm#0000000002', 'm#0000000003', 'm#0000000003#s']);
    // The same items under the fork's key: big bodies and whole outputs named where the source keeps them.
    expect(copied).toEqual(sourceItems.filter((i) => copied.some((c) => c.sk === i.sk)).map((i) => ({ ...i, pk: `conv#${fork}` })));
    expect((await aws.allKeys()).filter((k) => k.startsWith('conversations/')).length).toBe(blobs);

    expect(await forks.conversation(source, fork, 4)).toBe(0);
    expect(await rawItems(fork)).toEqual(copied);
    expect(await rawItems(source)).toEqual(sourceItems);
  });
});

describe('DynamoSessionLocks', () => {
  it('keep a session for a run whose record is not written yet, and release it once that run has ended', async () => {
    const { sessions } = aws.wiring();
    const states = new Map<string, boolean | undefined>([['run-a', undefined]]);
    const isRunning = async (id: string) => states.get(id);
    expect(await sessions.acquire('sess-grace', 'run-a', isRunning)).toBe('run-a');
    // run-a is still being created (no record): run-b must not take the session over.
    expect(await sessions.acquire('sess-grace', 'run-b', isRunning)).toBe('run-a');
    states.set('run-a', true);
    expect(await sessions.acquire('sess-grace', 'run-b', isRunning)).toBe('run-a');
    states.set('run-a', false);
    expect(await sessions.acquire('sess-grace', 'run-b', isRunning)).toBe('run-b');
    expect(await sessions.acquire('sess-grace', 'run-b', isRunning)).toBe('run-b');
  });

  it('free a session when its run releases it, and never when another run holds it', async () => {
    const { sessions } = aws.wiring();
    const running = async () => true;
    expect(await sessions.acquire('sess-release', 'run-a', running)).toBe('run-a');
    await sessions.release('sess-release', 'run-b');
    expect(await sessions.acquire('sess-release', 'run-b', running)).toBe('run-a');
    await sessions.release('sess-release', 'run-a');
    await sessions.release('sess-release', 'run-a');
    expect(await sessions.acquire('sess-release', 'run-b', running)).toBe('run-b');
  });

  it('take a session over from a holder whose record still says running once its lease has run out', async () => {
    const { dynamo } = awsClients(readEnv(aws.env));
    let now = new Date('2026-01-01T00:00:00Z');
    const sessions = new DynamoSessionLocks(new Documents(dynamo), aws.emulators.table, { clock: () => now, leaseSeconds: 3_600 });
    const stuck = async () => true;
    expect(await sessions.acquire('sess-lease', 'run-a', stuck)).toBe('run-a');
    now = new Date('2026-01-01T00:59:00Z');
    expect(await sessions.acquire('sess-lease', 'run-b', stuck)).toBe('run-a');
    now = new Date('2026-01-01T01:00:01Z');
    expect(await sessions.acquire('sess-lease', 'run-b', stuck)).toBe('run-b');
  });
});

describe('the running-runs quota on DynamoDB', () => {
  /** The API on the real run store, idempotency keys, session locks and slots, each request its own caller's. */
  const quotaApi = (maxRunningRuns: number) => {
    const { runs, idempotency, sessions, slots, events } = aws.wiring();
    let n = 0;
    const prefix = `quota-${Date.now()}-${counter++}`;
    return { ...memoryApi({ runs, idempotency, sessions, slots, events, maxRunningRuns, newId: () => `${prefix}-${++n}` }), runs };
  };

  it('answers ten parallel POST /runs at a limit of two with two 202s and eight 429 TooManyRuns', async () => {
    const api = quotaApi(2);
    const caller = as(`racer-${Date.now()}`);
    const answers = await Promise.all(Array.from({ length: 10 }, () => api.request('POST', '/runs', { goal: 'Add 2 and 3.', mode: 'single' }, caller)));
    const tally = (status: number) => answers.filter((a) => a.status === status).length;
    expect({ accepted: tally(202), refused: tally(429), codes: [...new Set(answers.filter((a) => a.status === 429).map((a) => a.body.error?.code))] }).toEqual({
      accepted: 2,
      refused: 8,
      codes: ['TooManyRuns'],
    });
    expect(api.starter.started).toHaveLength(2);
  });

  it('counts POST /agui as POST /runs, and frees a slot once its run ends', async () => {
    const api = quotaApi(1);
    const caller = as(`agui-${Date.now()}`);
    const turn = (threadId: string) => ({ threadId, runId: `${threadId}-run`, messages: [{ id: 'm1', role: 'user', content: 'Hi' }], tools: [], context: [], state: {}, forwardedProps: {} });
    expect((await api.request('POST', '/runs', { goal: 'Add 2 and 3.', mode: 'single' }, caller)).status).toBe(202);
    const refused = await api.request('POST', '/agui', turn(`thread-${counter++}`), caller);
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 429, code: 'TooManyRuns' });
    const [first] = api.starter.started;
    await api.request('POST', `/runs/${first?.runId}/cancel`, undefined, caller);
    const thread = `thread-${counter++}`;
    const accepted = await api.app.request('/agui', { method: 'POST', headers: { ...caller, 'content-type': 'application/json' }, body: JSON.stringify(turn(thread)) });
    await accepted.body?.cancel();
    expect(accepted.status).toBe(200);
    expect((await api.runs.get(`${thread}-run`))?.status).toBe('running');
  });
});

describe('DynamoRunSlots', () => {
  it('take a slot over from a run that ended, from one with no record after the grace period, and from any once the lease ran out', async () => {
    const { dynamo } = awsClients(readEnv(aws.env));
    let now = new Date('2026-01-01T00:00:00Z');
    const slots = new DynamoRunSlots(new Documents(dynamo), aws.emulators.table, { clock: () => now, leaseSeconds: 3_600 });
    const owner = { principal: `slots-${Date.now()}` };
    const states = new Map<string, boolean | undefined>([['run-a', true]]);
    const isRunning = async (id: string) => states.get(id);
    expect(await slots.take(owner, 'run-a', 2, isRunning)).toBe(true);
    expect(await slots.take(owner, 'run-a', 2, isRunning)).toBe(true);
    // run-b's intake is under way: no record yet.
    expect(await slots.take(owner, 'run-b', 2, isRunning)).toBe(true);
    expect(await slots.take(owner, 'run-c', 2, isRunning)).toBe(false);
    now = new Date('2026-01-01T00:01:00Z');
    expect(await slots.take(owner, 'run-c', 2, isRunning)).toBe(true);
    states.set('run-c', true);
    expect(await slots.take(owner, 'run-d', 2, isRunning)).toBe(false);
    states.set('run-a', false);
    expect(await slots.take(owner, 'run-d', 2, isRunning)).toBe(true);
    states.set('run-d', true);
    // A refused request gives its slot back at once.
    await slots.release(owner, 'run-d');
    expect(await slots.take(owner, 'run-e', 2, isRunning)).toBe(true);
    states.set('run-e', true);
    expect(await slots.take(owner, 'run-f', 2, isRunning)).toBe(false);
    // No run outlives the orchestrator's timeout: a holder older than the lease was lost.
    now = new Date('2026-01-01T01:01:00Z');
    expect(await slots.take(owner, 'run-f', 2, isRunning)).toBe(true);
    expect(await slots.take(owner, 'run-g', 2, isRunning)).toBe(true);
    expect(await slots.take(owner, 'run-h', 2, isRunning)).toBe(false);
  });
});

describe('DynamoStreamSlots', () => {
  it('hold a slot per open stream until it is given back, and free one a crashed stream kept once its lease ran out', async () => {
    const { dynamo } = awsClients(readEnv(aws.env));
    let now = new Date('2026-01-01T00:00:00Z');
    const streams = new DynamoStreamSlots(new Documents(dynamo), aws.emulators.table, { clock: () => now, leaseSeconds: 900 });
    const owner = { principal: `streams-${Date.now()}` };
    const runSlots = new DynamoRunSlots(new Documents(dynamo), aws.emulators.table, { clock: () => now });
    const opened = await Promise.all(['s-1', 's-2', 's-3', 's-4'].map((id) => streams.take(owner, id, 2)));
    expect(opened.filter(Boolean)).toHaveLength(2);
    // The quota of running runs is another family: its slots are free.
    expect(await runSlots.take(owner, 'run-1', 1, async () => true)).toBe(true);
    expect(await streams.take(owner, 's-5', 2)).toBe(false);
    now = new Date('2026-01-01T00:15:00Z');
    expect(await streams.take(owner, 's-5', 2)).toBe(true);
    await streams.release(owner, 's-5');
    expect(await streams.take(owner, 's-6', 2)).toBe(true);
  });
});

describe('DynamoRunStore', () => {
  it('creates a run once and counts each step’s usage and cost once, in total and per agent', async () => {
    const { runs } = aws.wiring();
    const run = newRun('run-store-1', 'goal');
    expect(await runs.create(run)).toBe(true);
    expect(await runs.create({ ...run, goal: 'other' })).toBe(false);
    const usage = { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 2, cacheCreationInputTokens: 1 };
    // Each count answers the run's totals after it; a repeated one adds nothing and answers none.
    expect(await runs.recordStep('run-store-1', 'single', 0, { usage, costUsd: 0.25 })).toEqual({ usage, estimatedCostUsd: 0.25 });
    expect(await runs.recordStep('run-store-1', 'single', 0, { usage, costUsd: 0.25 })).toBeUndefined();
    expect(await runs.recordStep('run-store-1', 'single', 1, { usage, costUsd: 0.25 })).toEqual({
      usage: { inputTokens: 20, outputTokens: 10, cacheReadInputTokens: 4, cacheCreationInputTokens: 2 },
      estimatedCostUsd: 0.5,
    });
    await runs.recordStep('run-store-1', 'single', 2, { usage: { ...usage, inputTokens: 1 } });
    await runs.finish('run-store-1', { status: 'succeeded', phase: 'complete', result: { response: 'done', actionsTaken: ['calculator'] } });

    const stored = await runs.get('run-store-1');
    expect(stored).toEqual({
      ...run,
      status: 'succeeded',
      phase: 'complete',
      result: { response: 'done', actionsTaken: ['calculator'] },
      iterations: { single: 3 },
      usage: { inputTokens: 21, outputTokens: 15, cacheReadInputTokens: 6, cacheCreationInputTokens: 3 },
      usageByAgent: { single: { inputTokens: 21, outputTokens: 15, cacheReadInputTokens: 6, cacheCreationInputTokens: 3 } },
      estimatedCostUsd: 0.5,
      updatedAt: expect.any(String),
    });
  });

  it('counts a summary and an answer of a step once each, never a stale retry of an earlier step, and keeps the record from growing with the steps', async () => {
    const { runs } = aws.wiring();
    const run = { ...newRun('run-store-marks', 'goal'), mode: 'multi' as const };
    await runs.create(run);
    const usage = { inputTokens: 1, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    await runs.recordStep(run.runId, 'architect', 0, { usage, call: 'summary' });
    await runs.recordStep(run.runId, 'architect', 0, { usage });
    // The step retried: its summary and its answer again.
    await runs.recordStep(run.runId, 'architect', 0, { usage, call: 'summary' });
    await runs.recordStep(run.runId, 'architect', 0, { usage });
    await runs.recordStep(run.runId, 'architect', 1, { usage });
    // A stale duplicate of step 0 that finishes after step 1, and the other agent's own step 0.
    await runs.recordStep(run.runId, 'architect', 0, { usage });
    await runs.recordStep(run.runId, 'coder', 0, { usage });
    expect((await runs.get(run.runId))?.usageByAgent).toMatchObject({ architect: { inputTokens: 3 }, coder: { inputTokens: 1 } });

    const [before] = (await rawItemsOf(`run#${run.runId}`)).filter((item) => item.sk === 'run');
    for (let i = 2; i < 60; i++) await runs.recordStep(run.runId, 'architect', i, { usage });
    const [after] = (await rawItemsOf(`run#${run.runId}`)).filter((item) => item.sk === 'run');
    expect(after?.['counted#architect']).toBe(119);
    expect(JSON.stringify(after).length - JSON.stringify(before).length).toBeLessThan(50);
    expect((await runs.get(run.runId))?.usage.inputTokens).toBe(62);
  });

  it('keeps a large goal in S3 and returns it whole', async () => {
    const { runs } = aws.wiring();
    const goal = '目標'.repeat(30_000);
    await runs.create(newRun('run-store-2', goal));
    expect((await runs.get('run-store-2'))?.goal).toBe(goal);
    expect((await aws.allKeys()).some((k) => k.startsWith('runs/run-store-2/goal-'))).toBe(true);
  });

  it('fails a run only while it runs, taking it out of the running runs, and says whether it did', async () => {
    const { runs } = aws.wiring();
    const owner = { principal: `ended-${Date.now()}` };
    await runs.create(newRun('run-store-ended', 'goal', { owner }));
    expect(await runs.countRunning(owner)).toBe(1);
    const error = { code: 'ExecutionAborted', message: 'Stopped.', agent: 'single' as const };
    expect(await runs.failIfRunning('run-store-ended', error)).toBe(true);
    expect(await runs.failIfRunning('run-store-ended', { ...error, code: 'ExecutionFailed' })).toBe(false);
    expect(await runs.get('run-store-ended')).toMatchObject({ status: 'failed', phase: 'failed', error });
    expect(await runs.countRunning(owner)).toBe(0);
    await runs.create(newRun('run-store-cancelled', 'goal'));
    await runs.cancel('run-store-cancelled');
    expect(await runs.failIfRunning('run-store-cancelled', error)).toBe(false);
    expect(await runs.get('run-store-cancelled')).toMatchObject({ status: 'cancelled' });
  });

  it('lists a running run with the cost and time of its latest step, which no index holds, and an ended one as its end left it', async () => {
    const { runs } = aws.wiring();
    const owner = { principal: `lister-${Date.now()}` };
    const run = newRun('run-store-listed', 'goal', { owner });
    await runs.create(run);
    const usage = { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    await runs.recordStep(run.runId, 'single', 0, { usage, costUsd: 0.25 });
    await runs.recordStep(run.runId, 'single', 1, { usage, costUsd: 0.5 });
    const [record] = (await rawItemsOf(`run#${run.runId}`)).filter((item) => item.sk === 'run');
    // The listed attributes are as the start wrote them; the steps wrote their own.
    expect(record).toMatchObject({ estimatedCostUsd: 0, updatedAt: run.updatedAt, liveCostUsd: 0.75 });
    const live = await runs.get(run.runId);
    expect(live).toMatchObject({ estimatedCostUsd: 0.75, updatedAt: record?.steppedAt });
    expect(live && live.updatedAt > run.updatedAt).toBe(true);
    const listed = async () => (await runs.list({ scope: { owner }, limit: 10 })).items;
    expect(await listed()).toEqual([
      { runId: run.runId, mode: 'single', goal: 'goal', status: 'running', phase: 'executing', createdAt: run.createdAt, updatedAt: live?.updatedAt, estimatedCostUsd: 0.75, owner },
    ]);
    expect((await runs.list({ scope: { owner }, status: 'running', limit: 10 })).items[0]).toMatchObject({ estimatedCostUsd: 0.75, updatedAt: live?.updatedAt });

    await runs.finish(run.runId, { status: 'succeeded', phase: 'complete', result: { response: 'done', actionsTaken: [] } });
    const ended = await runs.get(run.runId);
    expect(await listed()).toEqual([
      { runId: run.runId, mode: 'single', goal: 'goal', status: 'succeeded', phase: 'complete', createdAt: run.createdAt, updatedAt: ended?.updatedAt, estimatedCostUsd: 0.75, owner },
    ]);
    expect(ended && ended.updatedAt >= (live?.updatedAt ?? '')).toBe(true);
  });

  it('returns nothing for an unknown run', async () => {
    expect(await aws.wiring().runs.get('no-such-run')).toBeUndefined();
  });
});
