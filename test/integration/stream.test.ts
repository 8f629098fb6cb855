/**
 * The event stream through the local stack: the state machines run the steps, the HTTP server
 * streams, and watchers connect, disconnect and resume as clients do.
 */
import { type AGUIEvent, EventType } from '@ag-ui/core';
import { HttpAgent } from '@ag-ui/client';
import { Documents } from '../../functions/adapters/dynamo/documents.js';
import { seqKey } from '../../functions/core/conversation/conversation.js';
import { defaultFollowSettings } from '../../functions/core/stream/follow.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { apiClient as consoleClient } from '../../console/src/api.js';
import { followRun } from '../../console/src/follow.js';
import type { Transcript } from '../../console/src/transcript.js';
import { describe, expect, it } from 'vitest';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';
import { type Frame, eventsOf, frames } from '../support/sse.js';
import { aguiProblems } from '../support/stream-world.js';

// Twenty watchers of one caller at once: more than a caller's default cap on open streams (docs/http-api.md, "Limits on streams").
const local = useLocalStack({ STEPWISE_STREAM_MAX_SECONDS: '600', STEPWISE_MAX_STREAMS_PER_CALLER: '50' });
type Seen = { id: string; event: AGUIEvent }[];

function open(runId: string, options: { after?: string; token?: string } = {}): Promise<Response> {
  return fetch(`${local.stack.url}/runs/${runId}/events`, {
    headers: { ...(options.after ? { 'last-event-id': options.after } : {}), ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) },
  });
}

/** A watcher that reads the whole stream on one connection. */
async function watch(runId: string, options: { after?: string; token?: string } = {}): Promise<Seen> {
  const res = await open(runId, options);
  if (res.status === 204) return [];
  expect(res.status).toBe(200);
  const got: Frame[] = [];
  for await (const frame of frames(res)) got.push(frame);
  return eventsOf(got);
}

/** A watcher that takes one event per connection, then reconnects with the last id it received. */
async function watchReconnecting(runId: string): Promise<Seen> {
  const seen: Seen = [];
  for (let connections = 0; connections < 1000; connections++) {
    const res = await open(runId, { ...(seen.length ? { after: (seen.at(-1) as { id: string }).id } : {}) });
    if (res.status === 204) return seen;
    for await (const frame of frames(res)) {
      if (!frame.event || !frame.id) continue;
      seen.push({ id: frame.id, event: frame.event });
      break;
    }
  }
  throw new Error('Too many connections.');
}

/** Approves each call of the run that waits for a reviewer, until the run ends. */
async function approveAll(runId: string): Promise<void> {
  for (;;) {
    const { body } = await local.get(`/runs/${runId}`);
    if (body.status !== 'running') return;
    for (const waiting of (body.waitingFor ?? []) as { toolUseId: string }[]) {
      await local.post(`/runs/${runId}/approvals/${waiting.toolUseId}`, { decision: 'approve' });
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const plan = { goal: 'Greet', steps: [{ description: 'Write it', action: 'create_file', parameters: { path: 'greet.md' } }] };

/** Starts a multi-agent run that writes two files, each write waiting for a reviewer. */
async function multiRun(tag: string): Promise<string> {
  const script = local.book.add(
    tag,
    { turn: use(['toolu_ls', 'list_files', {}]) },
    { turn: { content: [{ type: 'text', text: 'The plan:' }, { type: 'tool_use', id: 'toolu_plan', name: 'finish_plan', input: plan }] } },
    { turn: use(['toolu_w1', 'write_file', { path: 'greet.md', content: 'Hello "world"\n' }], ['toolu_w2', 'write_file', { path: 'b.md', content: 'B' }]) },
    { turn: say('Wrote greet.md and b.md.'), delayMs: 300 },
  );
  const started = await local.post('/runs', { goal: `${script} Greet.`, approvals: { tools: ['write_file'] } });
  expect(started.status).toBe(202);
  return String(started.body.runId);
}

describe('GET /runs/{runId}/events on the local stack', () => {
  it('gives 20 watchers and a watcher that reconnects after every event one well-formed sequence, the one a replay gives', async () => {
    const runId = await multiRun('stream-many');
    const watchers = Array.from({ length: 20 }, () => watch(runId));
    const reconnecting = watchReconnecting(runId);
    await approveAll(runId);
    const sequences = await Promise.all(watchers);
    const replay = await watch(runId);

    expect(aguiProblems(replay.map((e) => e.event))).toEqual([]);
    for (const sequence of sequences) expect(sequence).toEqual(replay);
    expect(await reconnecting).toEqual(replay);
    const types = replay.map((e) => e.event.type);
    expect(types.filter((t) => t === EventType.STEP_STARTED)).toHaveLength(2);
    const custom = (name: string) => replay.map((e) => e.event).filter((e) => e.type === EventType.CUSTOM && e.name === name);
    expect(custom('stepwise.approval_requested')).toHaveLength(2);
    expect(custom('stepwise.approval_decided').map((e) => (e as { value: { decidedBy: string } }).value.decidedBy)).toEqual(['local', 'local']);
    expect(custom('stepwise.plan')).toEqual([{ type: EventType.CUSTOM, name: 'stepwise.plan', value: { plan } }]);
    expect(replay.at(-1)?.event).toMatchObject({ type: EventType.RUN_FINISHED, runId, threadId: runId, result: { response: 'Wrote greet.md and b.md.' } });
    // Tool call ids are the model's, each started, ended and answered once.
    const results = replay.map((e) => e.event).filter((e) => e.type === EventType.TOOL_CALL_RESULT).map((e) => (e as { toolCallId: string }).toolCallId);
    expect(results).toEqual(['toolu_ls', 'toolu_plan', 'toolu_w1', 'toolu_w2']);
  });

  it('resumes after every cursor with exactly the events that follow it, and answers 204 after the last', async () => {
    const runId = await multiRun('stream-resume');
    await approveAll(runId);
    const all = await watch(runId);
    expect(all.length).toBeGreaterThan(30);
    for (const [i, { id }] of all.entries()) expect(await watch(runId, { after: id })).toEqual(all.slice(i + 1));
    expect((await open(runId, { after: (all.at(-1) as { id: string }).id })).status).toBe(204);
    const garbage = await fetch(`${local.stack.url}/runs/${runId}/events?after=nonsense`);
    expect({ status: garbage.status, body: await garbage.json() }).toMatchObject({ status: 400, body: { error: { code: 'InvalidCursor' } } });
  });

  it('replays a finished run whole and ends', async () => {
    const tag = local.book.add('stream-finished', { turn: use(['toolu_c', 'calculator', { operation: 'add', a: 2, b: 3 }]) }, { turn: say('It is 5.') });
    const run = await local.run(`${tag} Add.`);
    const events = await watch(run.runId);
    expect(events.map((e) => e.event.type)).toEqual([
      'RUN_STARTED', 'CUSTOM', 'STEP_STARTED',
      'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'CUSTOM', 'TOOL_CALL_RESULT', 'CUSTOM',
      'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'CUSTOM',
      'STEP_FINISHED', 'CUSTOM', 'RUN_FINISHED',
    ]);
    expect(events.find((e) => e.event.type === EventType.TOOL_CALL_RESULT)?.event).toEqual({
      type: EventType.TOOL_CALL_RESULT, messageId: `${run.runId}:single:1.r0`, toolCallId: 'toolu_c', content: '5', role: 'tool',
    });
  });

  it('ends a cancelled run with RUN_FINISHED (cancelled) and a failed one with RUN_ERROR and its code', async () => {
    const gated = local.book.add('stream-cancel', { turn: use(['toolu_w', 'write_file', { path: 'a.md', content: 'A' }]) });
    const started = await local.post('/runs', { goal: `${gated} Write.`, mode: 'single', approvals: { tools: ['write_file'] } });
    const runId = String(started.body.runId);
    const watching = watch(runId);
    for (let i = 0; ((await local.get(`/runs/${runId}`)).body.waitingFor as unknown[]).length === 0; i++) {
      if (i > 300) throw new Error('The call never waited for a reviewer.');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await local.post(`/runs/${runId}/cancel`, {})).status).toBe(202);
    const cancelled = await watching;
    expect(aguiProblems(cancelled.map((e) => e.event))).toEqual([]);
    expect(cancelled.map((e) => e.event.type).slice(-4)).toEqual(['CUSTOM', 'STEP_FINISHED', 'CUSTOM', 'RUN_FINISHED']);
    expect(cancelled.at(-1)?.event).toEqual({ type: EventType.RUN_FINISHED, threadId: runId, runId, outcome: { type: 'cancelled' } });

    const broken = local.book.add('stream-fail', { status: 400, type: 'invalid_request_error', message: 'Bad request.' });
    const failed = await local.run(`${broken} Fail.`);
    const events = await watch(failed.runId);
    expect(aguiProblems(events.map((e) => e.event))).toEqual([]);
    expect(events.at(-1)?.event).toEqual({ type: EventType.RUN_ERROR, message: failed.error?.message, code: 'ModelRequestInvalid' });
  });

  it('stops reading the store when the watcher goes away', async () => {
    const gated = local.book.add('stream-leave', { turn: use(['toolu_w', 'write_file', { path: 'a.md', content: 'A' }]) }, { turn: say('Done.') });
    const started = await local.post('/runs', { goal: `${gated} Write.`, mode: 'single', approvals: { tools: ['write_file'] } });
    const runId = String(started.body.runId);
    const leave = new AbortController();
    const res = await fetch(`${local.stack.url}/runs/${runId}/events`, { signal: leave.signal });
    for await (const frame of frames(res)) if (frame.event?.type === EventType.CUSTOM && frame.event.name === 'stepwise.approval_requested') break;
    leave.abort();
    // Nothing else reads while the run waits for a reviewer: any Query now would be the stream's.
    await new Promise((r) => setTimeout(r, 1000));
    local.stack.requestCounter.reset();
    // Longer than the slowest poll of a follower (its idle interval), so one still following would read.
    await new Promise((r) => setTimeout(r, defaultFollowSettings.idlePollMs + 1000));
    expect((await local.stack.requestCounter.snapshot()).dynamo).toEqual({});
    await local.post(`/runs/${runId}/approvals/toolu_w`, { decision: 'approve' });
    expect((await local.waitFor(runId)).status).toBe('succeeded');
  });

  it("answers a watcher of someone else's run 404, as for a missing run", async () => {
    const [alice, bob] = await Promise.all([local.stack.issuer.issue({ sub: 'alice', tenant: 'acme' }), local.stack.issuer.issue({ sub: 'bob', tenant: 'acme' })]);
    const tag = local.book.add('stream-owner', { turn: say('Hi alice.') });
    const started = await local.request('POST', '/runs', { token: alice, body: { goal: `${tag} Hi.`, mode: 'single' } });
    const runId = String(started.body.runId);
    const hidden = await open(runId, { token: bob });
    expect({ status: hidden.status, body: await hidden.json() }).toEqual({ status: 404, body: { error: { code: 'RunNotFound', message: `No run ${runId}.` } } });
    const own = await watch(runId, { token: alice });
    expect(own.at(-1)?.event.type).toBe(EventType.RUN_FINISHED);
  });
});

describe('GET /runs/{runId}/events/page on the local stack', () => {
  /** Every event of the run as pages, each read after the last id of the one before, until `done`. */
  async function pages(runId: string): Promise<{ seen: Seen; reads: number }> {
    const seen: Seen = [];
    for (let reads = 1; reads < 1000; reads++) {
      const after = seen.at(-1)?.id;
      const { status, body } = await local.get(`/runs/${runId}/events/page${after ? `?after=${encodeURIComponent(after)}` : ''}`);
      expect(status).toBe(200);
      seen.push(...(body.items as Seen));
      if (body.done) return { seen, reads };
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('Too many pages.');
  }

  it('gives a poller, page after page while the run goes on, the stream’s own events and ids', async () => {
    const runId = await multiRun('page-live');
    const polled = pages(runId);
    await approveAll(runId);
    const { seen, reads } = await polled;
    const replay = await watch(runId);
    expect(seen).toEqual(replay);
    // It was read while the run went on, not once at its end.
    expect(reads).toBeGreaterThan(2);
  });

  it('answers from any cursor with exactly what the stream sends after it, and refuses a cursor it did not give', async () => {
    const runId = await multiRun('page-resume');
    await approveAll(runId);
    const all = await watch(runId);
    for (const [i, { id }] of all.entries()) {
      const { body } = await local.get(`/runs/${runId}/events/page?after=${encodeURIComponent(id)}`);
      expect(body).toEqual({ items: all.slice(i + 1), done: true });
    }
    const garbage = await local.get(`/runs/${runId}/events/page?after=nonsense`);
    expect({ status: garbage.status, body: garbage.body }).toMatchObject({ status: 400, body: { error: { code: 'InvalidCursor' } } });
  });

  it('gives the console following by pages the transcript it shows following the stream', async () => {
    const runId = await multiRun('page-console');
    await approveAll(runId);
    /** The console's follower, to the end of the run; without the stream route when `pages`. */
    const follow = (pages: boolean) =>
      new Promise<{ transcript: Transcript; modes: string[] }>((resolve, reject) => {
        const modes: string[] = [];
        let transcript: Transcript | undefined;
        const noStream: typeof fetch = async (input, init) => {
          const url = input instanceof Request ? input.url : String(input);
          if (pages && /\/events(\?|$)/.test(url)) return new Response(JSON.stringify({ error: { code: 'NotFound', message: 'No route.' } }), { status: 404 });
          return fetch(input, init);
        };
        const follower = followRun(consoleClient({ base: local.stack.url, authorization: () => undefined, fetch: noStream }), runId, {
          onTranscript: (t) => {
            transcript = t;
            if (t.finished) {
              follower.stop();
              resolve({ transcript: t, modes });
            }
          },
          onMode: (mode) => void modes.push(mode.kind),
          onError: reject,
        }, { pollMs: 20, schedule: (redraw) => redraw() });
        setTimeout(() => reject(new Error(`Not finished: ${JSON.stringify(transcript?.finished)}`)), 20_000);
      });
    const [streamed, paged] = await Promise.all([follow(false), follow(true)]);
    expect(streamed.modes).toContain('stream');
    expect(paged.modes).toContain('polling');
    expect(paged.transcript).toEqual(streamed.transcript);
  });

  it("answers someone else's run 404, as for a missing run", async () => {
    const [alice, bob] = await Promise.all([local.stack.issuer.issue({ sub: 'alice', tenant: 'acme' }), local.stack.issuer.issue({ sub: 'bob', tenant: 'acme' })]);
    const tag = local.book.add('page-owner', { turn: say('Hi alice.') });
    const started = await local.request('POST', '/runs', { token: alice, body: { goal: `${tag} Hi.`, mode: 'single' } });
    const runId = String(started.body.runId);
    const hidden = await local.request('GET', `/runs/${runId}/events/page`, { token: bob });
    expect({ status: hidden.status, body: hidden.body }).toEqual({ status: 404, body: { error: { code: 'RunNotFound', message: `No run ${runId}.` } } });
    expect((await local.request('GET', `/runs/${runId}/events/page`, { token: alice })).status).toBe(200);
  });
});

describe('live text on the local stack', () => {
  it('shows the text of an answer still being written before the step stores it, continued by the stored text', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    // The model call does not return until the watcher has seen the live text.
    const tag = local.book.respondWith('stream-live', async () => {
      await released;
      return { turn: say('Streaming hello, world.') };
    });
    const started = await local.post('/runs', { goal: `${tag} Greet.`, mode: 'single' });
    const runId = String(started.body.runId);
    const res = await open(runId);
    for (let i = 0; ((await local.get(`/runs/${runId}/messages`)).body.items as unknown[]).length === 0; i++) {
      if (i > 300) throw new Error('The opening message was never stored.');
      await new Promise((r) => setTimeout(r, 50));
    }
    // What the inference step writes while the model generates: one item per attempt, growing.
    const { dynamo } = awsClients(readEnv(process.env));
    const doc = new Documents(dynamo);
    const attempt = `${Date.now().toString().padStart(13, '0')}-abc123`;
    const item = (chunks: { block: number; kind: 'text'; delta: string }[]) => ({
      pk: `live#${runId}`, sk: `single#${seqKey(1)}#${attempt}`, runId, agent: 'single', seq: 1, attempt, chunks, updatedAt: new Date().toISOString(),
    });
    await doc.put({ TableName: process.env.STEPWISE_TABLE, Item: item([{ block: 0, kind: 'text', delta: 'Streaming ' }]) });
    await doc.put({ TableName: process.env.STEPWISE_TABLE, Item: item([{ block: 0, kind: 'text', delta: 'Streaming ' }, { block: 0, kind: 'text', delta: 'hello, ' }]) });

    const seen: Frame[] = [];
    let storedWhenSeen: number | undefined;
    for await (const frame of frames(res)) {
      seen.push(frame);
      if (frame.event?.type === EventType.TEXT_MESSAGE_CONTENT && storedWhenSeen === undefined) {
        storedWhenSeen = ((await local.get(`/runs/${runId}/messages`)).body.items as unknown[]).length;
        release();
      }
    }
    expect(storedWhenSeen).toBe(1);
    const events = eventsOf(seen).map((e) => e.event);
    expect(aguiProblems(events)).toEqual([]);
    const text = events.filter((e) => e.type === EventType.TEXT_MESSAGE_CONTENT) as { messageId: string; delta: string }[];
    expect(text.map((e) => [e.messageId, e.delta])).toEqual([
      [`${runId}:single:1:0`, 'Streaming '],
      [`${runId}:single:1:0`, 'hello, '],
      [`${runId}:single:1:0`, 'world.'],
    ]);
    // The step's own live write (there is one when the model's first delta comes after the writer's
    // interval, as it may while the model waits for the release) carries an attempt id from before
    // the one written above. A watcher reads on from what it has seen, so it never shows that
    // attempt, while a replay would show it as abandoned: this test's attempt stands for the step's.
    const own = await doc.query({ TableName: process.env.STEPWISE_TABLE, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': `live#${runId}` } });
    for (const { sk } of own.Items ?? []) if (!String(sk).endsWith(attempt)) await doc.delete({ TableName: process.env.STEPWISE_TABLE, Key: { pk: `live#${runId}`, sk } });
    expect(await watch(runId)).toEqual(eventsOf(seen));
  });
});

describe('POST /agui with @ag-ui/client', () => {
  it('runs two turns on one thread: the second turn sees the first', async () => {
    const tag = local.book.respondWith('agui-thread', (_body, n) => ({ turn: say(n === 0 ? 'Noted: your number is 42.' : 'Your number was 42.') }));
    const agent = new HttpAgent({ url: `${local.stack.url}/agui`, threadId: 'thread-agui-1' });
    agent.addMessage({ id: 'u1', role: 'user', content: `${tag} My number is 42.` });
    await agent.runAgent({ runId: 'agui-turn-1' });
    agent.addMessage({ id: 'u2', role: 'user', content: 'What was my number?' });
    const second = await agent.runAgent({ runId: 'agui-turn-2', forwardedProps: { stepwise: { maxIterations: 3 } } });

    const requests = local.book.requests.get('agui-thread') ?? [];
    expect(requests).toHaveLength(2);
    const sent = JSON.stringify(requests[1]?.messages);
    expect(sent).toContain('My number is 42.');
    expect(sent).toContain('Noted: your number is 42.');
    expect(sent).toContain('What was my number?');
    expect(second.newMessages.map((m) => ({ role: m.role, content: m.content }))).toEqual([{ role: 'assistant', content: 'Your number was 42.' }]);
    expect(agent.messages.map((m) => m.content)).toEqual([`${tag} My number is 42.`, 'Noted: your number is 42.', 'What was my number?', 'Your number was 42.']);
    const runs = await Promise.all(['agui-turn-1', 'agui-turn-2'].map(async (id) => (await local.get(`/runs/${id}`)).body));
    expect(runs.map((r) => ({ mode: r.mode, sessionId: r.sessionId, status: r.status }))).toEqual([
      { mode: 'single', sessionId: 'thread-agui-1', status: 'succeeded' },
      { mode: 'single', sessionId: 'thread-agui-1', status: 'succeeded' },
    ]);
  });
});
