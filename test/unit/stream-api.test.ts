import { EventType } from '@ag-ui/core';
import { describe, expect, it, vi } from 'vitest';
import { as, memoryApi } from '../support/api.js';
import { eventsOf, parseSse } from '../support/sse.js';
import { aguiProblems } from '../support/stream-world.js';

const alice = as('alice', { tenant: 'acme' });
const bob = as('bob', { tenant: 'acme' });
const quick = { stream: { maxDurationMs: 50, fastPollMs: 5, idlePollMs: 10 } };

/** A finished single-mode run of alice's: one calculator call and an answer. */
async function finishedRun(api: ReturnType<typeof memoryApi>) {
  const { body } = await api.request('POST', '/runs', { goal: 'Add 2 and 3.', mode: 'single' }, alice);
  const runId = String(body.runId);
  const conversation = `run/${runId}/single`;
  const meta = { runId, iteration: 0 };
  await api.conversations.append(conversation, { seq: 0, role: 'user', content: [{ type: 'text', text: 'Add 2 and 3.' }], meta });
  await api.conversations.append(conversation, { seq: 1, role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'calculator', input: { operation: 'add', a: 2, b: 3 } }], meta: { ...meta, stopReason: 'tool_use' } });
  await api.conversations.putResult(conversation, 1, 0, { type: 'tool_result', tool_use_id: 'toolu_1', content: '5' });
  await api.conversations.append(conversation, { seq: 2, role: 'user', content: [], meta: { runId, iteration: 1 }, carries: { seq: 1, count: 1 } });
  await api.conversations.append(conversation, { seq: 3, role: 'assistant', content: [{ type: 'text', text: 'It is 5.' }], meta: { runId, iteration: 1, stopReason: 'end_turn' } });
  await api.runs.finish(runId, { status: 'succeeded', phase: 'complete', result: { response: 'It is 5.', actionsTaken: ['calculator'] } });
  return runId;
}

async function get(api: ReturnType<typeof memoryApi>, path: string, headers: Record<string, string> = alice) {
  const res = await api.app.request(path, { headers });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

describe('GET /runs/{runId}/events', () => {
  it('replays a finished run as server-sent AG-UI events, each with its cursor as id, and ends', async () => {
    const api = memoryApi();
    const runId = await finishedRun(api);
    const res = await get(api, `/runs/${runId}/events`);
    expect({ status: res.status, type: res.type }).toEqual({ status: 200, type: 'text/event-stream' });
    const events = eventsOf(parseSse(res.text));
    expect(aguiProblems(events.map((e) => e.event))).toEqual([]);
    expect(events.map((e) => e.event.type)).toEqual([
      'RUN_STARTED', 'CUSTOM', 'STEP_STARTED',
      'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT', 'CUSTOM',
      'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END',
      'STEP_FINISHED', 'CUSTOM', 'RUN_FINISHED',
    ]);
    expect(events.map((e) => e.id).slice(0, 4)).toEqual(['h.0', 'h.1', 'single.o.0', 'single.1.0']);
    expect(events.at(-1)?.event).toEqual({ type: EventType.RUN_FINISHED, threadId: runId, runId, result: { response: 'It is 5.', actionsTaken: ['calculator'] } });
  });

  it('resumes after Last-Event-ID or ?after=, the header winning, and answers 204 after the last event', async () => {
    const api = memoryApi();
    const runId = await finishedRun(api);
    const all = eventsOf(parseSse((await get(api, `/runs/${runId}/events`)).text));
    for (const [i, { id }] of all.entries()) {
      const byHeader = await get(api, `/runs/${runId}/events`, { ...alice, 'last-event-id': id });
      const byQuery = await get(api, `/runs/${runId}/events?after=${encodeURIComponent(id)}`);
      if (i === all.length - 1) {
        expect([byHeader.status, byQuery.status]).toEqual([204, 204]);
        continue;
      }
      expect(eventsOf(parseSse(byHeader.text))).toEqual(all.slice(i + 1));
      expect(eventsOf(parseSse(byQuery.text))).toEqual(all.slice(i + 1));
    }
    const both = await get(api, `/runs/${runId}/events?after=h.0`, { ...alice, 'last-event-id': 'single.1.3' });
    expect(eventsOf(parseSse(both.text))[0]?.id).toBe('single.1.4');
  });

  it.each(['garbage', 'coder.1.0', 'single.1', 'h.-1'])('refuses the cursor %j with 400 InvalidCursor', async (cursor) => {
    const api = memoryApi();
    const runId = await finishedRun(api);
    const res = await get(api, `/runs/${runId}/events?after=${cursor}`);
    expect({ status: res.status, code: JSON.parse(res.text).error.code }).toEqual({ status: 400, code: 'InvalidCursor' });
  });

  it("answers someone else's run exactly as a missing one", async () => {
    const api = memoryApi();
    const runId = await finishedRun(api);
    const hidden = await get(api, `/runs/${runId}/events`, bob);
    const missing = await get(api, '/runs/no-such-run/events', bob);
    expect({ status: hidden.status, body: JSON.parse(hidden.text) }).toEqual({ status: 404, body: { error: { code: 'RunNotFound', message: `No run ${runId}.` } } });
    expect(hidden.text.replace(runId, 'no-such-run')).toBe(missing.text);
  });

  it('ends a stream open for its longest duration with a comment naming the cursor to resume from', async () => {
    const api = memoryApi(quick);
    const { body } = await api.request('POST', '/runs', { goal: 'Wait.', mode: 'single' }, alice);
    const frames = parseSse((await get(api, `/runs/${String(body.runId)}/events`)).text);
    expect(eventsOf(frames).map((e) => e.id)).toEqual(['h.0', 'h.1', 'single.o.0']);
    expect(frames.at(-1)).toEqual({ comment: 'the stream ends after 0 s; resume with Last-Event-ID: single.o.0' });
  });
});

describe('POST /agui', () => {
  const input = (extra: Record<string, unknown> = {}) => ({
    threadId: 'thread-1',
    runId: 'agui-run-1',
    messages: [
      { id: 'm1', role: 'user', content: 'First question' },
      { id: 'm2', role: 'assistant', content: 'First answer' },
      { id: 'm3', role: 'user', content: [{ type: 'text', text: 'Second' }, { type: 'text', text: 'question' }] },
    ],
    tools: [],
    context: [],
    state: {},
    forwardedProps: { stepwise: { maxIterations: 5, mode: 'multi' } },
    ...extra,
  });

  it('starts a single-mode run on the thread\'s session with the last user message as its goal, and answers its stream', async () => {
    const api = memoryApi(quick);
    const res = await api.app.request('/agui', { method: 'POST', headers: { ...alice, 'content-type': 'application/json' }, body: JSON.stringify(input()) });
    expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({ status: 200, type: 'text/event-stream' });
    const events = eventsOf(parseSse(await res.text()));
    expect(events[0]?.event).toEqual({ type: EventType.RUN_STARTED, threadId: 'thread-1', runId: 'agui-run-1' });
    const run = await api.runs.get('agui-run-1');
    expect(run).toMatchObject({ mode: 'single', sessionId: 'thread-1', goal: 'Second\nquestion', status: 'running' });
    expect(api.starter.started).toEqual([{ runId: 'agui-run-1', mode: 'single', agent: 'single', label: 'single', conversationId: expect.stringMatching(/^session\/.+\/thread-1$/), maxIterations: 5, model: '' }]);

    // The same input again starts nothing new and answers the same run's stream.
    const again = await api.app.request('/agui', { method: 'POST', headers: { ...alice, 'content-type': 'application/json' }, body: JSON.stringify(input()) });
    expect(eventsOf(parseSse(await again.text()))[0]?.event).toEqual({ type: EventType.RUN_STARTED, threadId: 'thread-1', runId: 'agui-run-1' });
    expect(api.starter.started).toHaveLength(1);
  });

  it('answers a run id another caller\'s run has as every route answers a run the caller may not see (404), and starts nothing', async () => {
    const api = memoryApi(quick);
    const post = (who: Record<string, string>) =>
      api.app.request('/agui', { method: 'POST', headers: { ...who, 'content-type': 'application/json' }, body: JSON.stringify(input()) });
    expect((await post(alice)).status).toBe(200);
    const taken = await post(bob);
    const missing = await api.request('GET', '/runs/agui-run-1', undefined, bob);
    expect({ status: taken.status, body: await taken.json() }).toEqual({ status: missing.status, body: missing.body });
    expect(missing).toEqual({ status: 404, body: { error: { code: 'RunNotFound', message: 'No run agui-run-1.' } } });
    // The owner's own retry still answers its run.
    expect((await post(alice)).status).toBe(200);
    expect(api.starter.started).toHaveLength(1);
  });

  it('makes up a run id when the client\'s is not a valid Stepwise run id', async () => {
    const api = memoryApi(quick);
    const res = await api.app.request('/agui', { method: 'POST', headers: { ...alice, 'content-type': 'application/json' }, body: JSON.stringify(input({ runId: 'has spaces' })) });
    expect(eventsOf(parseSse(await res.text()))[0]?.event).toEqual({ type: EventType.RUN_STARTED, threadId: 'thread-1', runId: 'run-1' });
  });

  it.each([
    ['no threadId', { threadId: undefined }, 'threadId'],
    ['a message without an id', { messages: [{ role: 'user', content: 'x' }] }, 'messages.0.id'],
    ['no user message', { messages: [{ id: 'a', role: 'assistant', content: 'x' }] }, 'messages'],
    ['a thread id no session can have', { threadId: 'a/b' }, 'threadId'],
    ['a bad Stepwise field', { forwardedProps: { stepwise: { maxIterations: 1000 } } }, 'forwardedProps.stepwise.maxIterations'],
    ['an unknown Stepwise field', { forwardedProps: { stepwise: { colour: 'red' } } }, 'forwardedProps.stepwise'],
  ])('refuses %s with a 400 naming it, and starts nothing', async (_name, change, path) => {
    const api = memoryApi(quick);
    const res = await api.request('POST', '/agui', input(change), alice);
    expect(res.status).toBe(400);
    expect(res.body.error?.code).toBe('ValidationFailed');
    expect(res.body.error?.issues?.map((i) => i.path)).toContain(path);
    expect(api.writes()).toBe(0);
  });
});

describe('limits on streams', () => {
  const held = { maxStreamsPerCaller: 2, stream: { maxDurationMs: 60_000, fastPollMs: 5, idlePollMs: 10 } };
  const turn = (threadId: string) => ({ threadId, runId: `${threadId}-run`, messages: [{ id: 'm1', role: 'user', content: 'Hi' }], tools: [], context: [], state: {}, forwardedProps: {} });

  it('refuses a caller’s stream past its open streams with 429 TooManyStreams, /agui too (starting no run); another caller’s is its own; a stream that ends gives its slot back', async () => {
    const api = memoryApi(held);
    await api.request('POST', '/runs', { goal: 'Add 2 and 3.', mode: 'single' }, alice);
    await api.request('POST', '/runs', { goal: 'Add 2 and 3.', mode: 'single' }, bob);
    const watch = (caller: Record<string, string>, runId: string) => api.app.request(`/runs/${runId}/events`, { headers: caller });
    const [first, second] = [await watch(alice, 'run-1'), await watch(alice, 'run-1')];
    expect([first.status, second.status]).toEqual([200, 200]);

    const third = await api.request('GET', '/runs/run-1/events', undefined, alice);
    expect({ status: third.status, code: third.body.error?.code }).toEqual({ status: 429, code: 'TooManyStreams' });
    const agui = await api.request('POST', '/agui', turn('thread-1'), alice);
    expect({ status: agui.status, code: agui.body.error?.code, run: await api.runs.get('thread-1-run') }).toEqual({ status: 429, code: 'TooManyStreams', run: undefined });
    const bobs = await watch(bob, 'run-2');
    expect(bobs.status).toBe(200);

    // The client goes away: the stream ends and frees its slot.
    await first.body?.cancel();
    await vi.waitFor(() => expect(api.streamSlots.open()).toBe(2));
    const again = await watch(alice, 'run-1');
    expect(again.status).toBe(200);
    await Promise.all([second, bobs, again].map((res) => res.body?.cancel()));
    await vi.waitFor(() => expect(api.streamSlots.open()).toBe(0));
  });

  it('gives the slot back when nothing streams: a finished run’s 204, an unknown run, a refused /agui run', async () => {
    const api = memoryApi({ ...held, maxRunningRuns: 1 });
    await api.request('POST', '/runs', { goal: 'Add 2 and 3.', mode: 'single' }, alice);
    await api.runs.finish('run-1', { status: 'succeeded', phase: 'complete' });
    const replay = await api.app.request('/runs/run-1/events', { headers: alice });
    await replay.text();
    await api.request('POST', '/runs', { goal: 'Add 2 and 3.', mode: 'single' }, alice);
    const refused = await api.request('POST', '/agui', turn('thread-2'), alice);
    expect(refused.body.error?.code).toBe('TooManyRuns');
    expect((await api.request('GET', '/runs/run-9/events', undefined, alice)).status).toBe(404);
    expect(api.streamSlots.open()).toBe(0);
  });
});
