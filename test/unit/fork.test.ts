import { describe, expect, it } from 'vitest';
import { ScriptedModel } from '../../functions/adapters/model/scripted.js';
import { type NewMessage } from '../../functions/core/conversation/types.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { maxForkFiles } from '../../functions/core/fork/types.js';
import { textBlock, toolResult } from '../../functions/core/model/messages.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { as, memoryApi } from '../support/api.js';
import { say } from '../support/agents.js';

const alice = as('alice', { tenant: 'acme' });
const bob = as('bob', { tenant: 'acme' });
const bytes = (text: string) => new TextEncoder().encode(text);
const usage = { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

type Api = ReturnType<typeof memoryApi>;

/**
 * Alice's session "chat" with two runs: run-1 asks turn one (0), writes a file (1, its result
 * carried by 2) and answers (3); run-2 asks turn two (4) and answers (5). run-2's workspace holds
 * notes.md.
 */
async function twoTurns(api: Api) {
  await api.request('POST', '/runs', { goal: 'Turn one: write a.md.', mode: 'single', sessionId: 'chat' }, alice);
  await api.runs.finish('run-1', { status: 'succeeded', phase: 'complete' });
  await api.request('POST', '/runs', { goal: 'Turn two: and b.md.', mode: 'single', sessionId: 'chat' }, alice);
  const conversationId = api.starter.started[0]?.conversationId ?? '';
  const append = (m: NewMessage) => api.conversations.append(conversationId, m);
  await append({ seq: 0, role: 'user', content: [textBlock('Turn one: write a.md.')], meta: { runId: 'run-1', iteration: 0 } });
  await append({
    seq: 1,
    role: 'assistant',
    content: [{ type: 'tool_use', id: 'toolu_a', name: 'write_file', input: { path: 'a.md', content: 'A' } }],
    meta: { runId: 'run-1', iteration: 0, stopReason: 'tool_use', usage, model: 'claude-test' },
  });
  await api.conversations.putResult(conversationId, 1, 0, toolResult('toolu_a', 'Wrote a.md.'));
  await append({ seq: 2, role: 'user', content: [], meta: { runId: 'run-1', iteration: 1 }, carries: { seq: 1, count: 1 } });
  await append({ seq: 3, role: 'assistant', content: [textBlock('Done one.')], meta: { runId: 'run-1', iteration: 1, stopReason: 'end_turn', usage, model: 'claude-test' } });
  await append({ seq: 4, role: 'user', content: [textBlock('Turn two: and b.md.')], meta: { runId: 'run-2', iteration: 0 } });
  await append({ seq: 5, role: 'assistant', content: [textBlock('Done two.')], meta: { runId: 'run-2', iteration: 0, stopReason: 'end_turn', usage, model: 'claude-test' } });
  api.workspace('run-2').files.set('notes.md', bytes('two'));
  return conversationId;
}

/** Everything a fork could have written: runs, starts, keys, conversations and workspaces besides the source's. */
function snapshot(api: Api) {
  return {
    writes: api.writes(),
    conversations: [...api.conversations.items.entries()].filter(([, items]) => items.size > 0).map(([id, items]) => [id, items.size]),
    files: api.workspace('run-3').files.size,
  };
}

describe('POST /runs/{runId}/fork', () => {
  it("starts a single-mode run of the caller on the messages before fromSeq and a copy of the workspace, and leaves the source as it was", async () => {
    const api = memoryApi();
    const source = await twoTurns(api);
    const before = { conversation: await api.conversations.load(source), items: api.conversations.count(source), run: await api.runs.get('run-2') };

    const forked = await api.request('POST', '/runs/run-2/fork', { fromSeq: 4, goal: 'Turn three: c.md instead.' }, alice);
    expect(forked).toEqual({ status: 202, body: { runId: 'run-3', status: 'running', phase: 'idle' } });
    expect(api.starter.started.at(-1)).toEqual({ runId: 'run-3', mode: 'single', agent: 'single', label: 'single', conversationId: 'run/run-3/single', maxIterations: 25, model: '' });

    const copied = await api.conversations.load('run/run-3/single');
    expect(copied).toEqual({ ...before.conversation, messages: before.conversation.messages.filter((m) => m.seq < 4) });
    expect(api.conversations.count('run/run-3/single')).toBe(5);
    expect(api.workspace('run-3').files).toEqual(new Map([['notes.md', bytes('two')]]));

    const view = await api.request('GET', '/runs/run-3', undefined, alice);
    expect(view.body).toMatchObject({
      runId: 'run-3',
      mode: 'single',
      goal: 'Turn three: c.md instead.',
      owner: { principal: 'test#alice', tenant: 'acme' },
      forkedFrom: { runId: 'run-2', agent: 'single', seq: 4 },
      status: 'running',
    });
    expect(view.body.sessionId).toBeUndefined();

    expect(await api.conversations.load(source)).toEqual(before.conversation);
    expect(api.conversations.count(source)).toBe(before.items);
    expect(await api.runs.get('run-2')).toEqual(before.run);
    expect(api.workspace('run-2').files).toEqual(new Map([['notes.md', bytes('two')]]));
  });

  it("sends the model the copied turns as the fork's history, then its goal, and counts only the fork's own calls", async () => {
    const api = memoryApi();
    await twoTurns(api);
    await api.request('POST', '/runs/run-2/fork', { fromSeq: 4, goal: 'Turn three.' }, alice);
    const model = new ScriptedModel([say('Done three.')]);
    const step = await inferenceStep(
      { runId: 'run-3', agent: 'single', iteration: 0, conversationId: 'run/run-3/single' },
      { conversations: api.conversations, runs: api.runs, model, settings: { model: 'claude-test', maxTokens: 1024 } },
    );
    expect(step).toEqual({ stopReason: 'end_turn', toolCalls: [], gated: false, iteration: 0, next: 1, seq: 5 });
    expect(model.requests[0]?.messages).toEqual([
      { role: 'user', content: [textBlock('Turn one: write a.md.')] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_a', name: 'write_file', input: { path: 'a.md', content: 'A' } }] },
      { role: 'user', content: [toolResult('toolu_a', 'Wrote a.md.')] },
      { role: 'assistant', content: [textBlock('Done one.')] },
      { role: 'user', content: [textBlock('Turn three.')] },
    ]);
    // The source's tool call is history, not an action of the fork.
    expect((await api.runs.get('run-3'))?.result).toEqual({ response: 'Done three.', actionsTaken: [] });
  });

  it('sends the message at fromSeq again when no goal is given ("retry from here")', async () => {
    const api = memoryApi();
    await twoTurns(api);
    const forked = await api.request('POST', '/runs/run-2/fork', { fromSeq: 4 }, alice);
    expect(forked.status).toBe(202);
    expect((await api.runs.get('run-3'))?.goal).toBe('Turn two: and b.md.');
    expect((await api.conversations.load('run/run-3/single')).messages.map((m) => m.seq)).toEqual([0, 1, 2, 3]);
  });

  it.each([
    ['an assistant message', 'run-1', { fromSeq: 3 }, 'fromSeq', "names message 3, the model's answer; fork from a user message"],
    ['a tool-result carrier', 'run-1', { fromSeq: 2 }, 'fromSeq', 'names message 2, which carries tool results; fork from a user message that states a turn'],
    ['a message past the end', 'run-2', { fromSeq: 6 }, 'fromSeq', 'names no message of run run-2 (no message 6 in its transcript)'],
    ["another run's message of the session", 'run-2', { fromSeq: 0 }, 'fromSeq', 'names no message of run run-2 (no message 0 in its transcript)'],
    ['a negative fromSeq', 'run-2', { fromSeq: -1 }, 'fromSeq', expect.any(String)],
    ['no fromSeq', 'run-2', { goal: 'x' }, 'fromSeq', expect.any(String)],
    ['an agent a single-mode run lacks', 'run-2', { fromSeq: 4, agent: 'coder' }, 'agent', 'must be single (or left out): run run-2 is a single-mode run'],
  ])('refuses %s with a 400 naming the field, and writes nothing', async (_what, runId, body, field, problem) => {
    const api = memoryApi();
    await twoTurns(api);
    const before = snapshot(api);
    const refused = await api.request('POST', `/runs/${runId}/fork`, body, alice);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'ValidationFailed', issues: [{ path: field, message: problem }] });
    expect(snapshot(api)).toEqual(before);
  });

  it('refuses a retry from a message with no text of its own, naming goal', async () => {
    const api = memoryApi();
    await twoTurns(api);
    await api.conversations.append(api.starter.started[0]?.conversationId ?? '', { seq: 6, role: 'user', content: [], meta: { runId: 'run-2', iteration: 1 } });
    const refused = await api.request('POST', '/runs/run-2/fork', { fromSeq: 6 }, alice);
    expect(refused.body.error).toMatchObject({ code: 'ValidationFailed', issues: [{ path: 'goal', message: 'is required: message 6 has no text of its own to send again' }] });
  });

  it("answers a fork of someone else's run as a missing run, and writes nothing", async () => {
    const api = memoryApi();
    await twoTurns(api);
    const before = snapshot(api);
    const hidden = await api.request('POST', '/runs/run-2/fork', { fromSeq: 4 }, bob);
    expect(hidden).toEqual({ status: 404, body: { error: { code: 'RunNotFound', message: 'No run run-2.' } } });
    expect(snapshot(api)).toEqual(before);
  });

  it("forks one agent of a multi-agent run, named by agent, and refuses without it", async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal: 'Plan and build.' }, alice);
    const opening = 'The user\'s goal:\nPlan and build.\n\nThe Architect\'s plan:\n1. Build.\n\nCarry out this plan in the workspace.';
    await api.conversations.append(conversationIdOf('run-1', 'coder'), { seq: 0, role: 'user', content: [textBlock(opening)], meta: { runId: 'run-1', iteration: 0 } });
    const before = snapshot(api);
    const refused = await api.request('POST', '/runs/run-1/fork', { fromSeq: 0 }, alice);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ issues: [{ path: 'agent', message: 'is required: run run-1 is a multi-agent run; name architect or coder' }] });
    expect(snapshot(api)).toEqual(before);

    expect((await api.request('POST', '/runs/run-1/fork', { fromSeq: 0, agent: 'coder' }, alice)).status).toBe(202);
    expect(await api.runs.get('run-2')).toMatchObject({ mode: 'single', goal: opening, forkedFrom: { runId: 'run-1', agent: 'coder', seq: 0 } });
  });

  it('makes one fork for repeats of an Idempotency-Key and request, and refuses the key with another request', async () => {
    const api = memoryApi();
    await twoTurns(api);
    const key = { 'idempotency-key': 'fork-1' };
    const first = await api.request('POST', '/runs/run-2/fork', { fromSeq: 4, goal: 'Again.' }, { ...alice, ...key });
    const writes = api.conversations.writes;
    const again = await api.request('POST', '/runs/run-2/fork', { goal: 'Again.', fromSeq: 4 }, { ...alice, ...key });
    expect(again).toEqual(first);
    expect(api.starter.started.filter((s) => s.runId === 'run-3')).toHaveLength(1);
    expect(api.conversations.writes).toBe(writes);
    const other = await api.request('POST', '/runs/run-2/fork', { fromSeq: 4, goal: 'Something else.' }, { ...alice, ...key });
    expect({ status: other.status, code: other.body.error?.code }).toEqual({ status: 409, code: 'IdempotencyConflict' });
  });

  it('completes a copy a crash cut short when the request is repeated, before the fork starts', async () => {
    let crash = true;
    const api = memoryApi({ log: { error: () => undefined } });
    await twoTurns(api);
    const original = api.conversations.copyBefore.bind(api.conversations);
    api.conversations.copyBefore = async (from, to, beforeSeq) => {
      const written = await original(from, to, beforeSeq);
      if (crash) throw new Error('The function died after copying.');
      return written;
    };
    const key = { 'idempotency-key': 'fork-crash' };
    expect((await api.request('POST', '/runs/run-2/fork', { fromSeq: 4 }, { ...alice, ...key })).status).toBe(500);
    expect(await api.runs.get('run-3')).toBeUndefined();
    expect(api.starter.started.map((s) => s.runId)).toEqual(['run-1', 'run-2']);
    crash = false;
    const repeated = await api.request('POST', '/runs/run-2/fork', { fromSeq: 4 }, { ...alice, ...key });
    expect(repeated.body.runId).toBe('run-3');
    expect(api.conversations.count('run/run-3/single')).toBe(5);
    expect(api.workspace('run-3').files.size).toBe(1);
  });

  it(`refuses a source whose workspace holds more than ${maxForkFiles} files with a 409, and writes nothing`, async () => {
    const api = memoryApi();
    await twoTurns(api);
    for (let i = 0; i < maxForkFiles; i++) api.workspace('run-2').files.set(`f/${i}.txt`, bytes('x'));
    const before = snapshot(api);
    const refused = await api.request('POST', '/runs/run-2/fork', { fromSeq: 4 }, alice);
    expect(refused).toEqual({
      status: 409,
      body: { error: { code: 'ForkTooLarge', message: `The workspace of run run-2 holds more than ${maxForkFiles} files; a fork copies at most ${maxForkFiles}.` } },
    });
    expect(snapshot(api)).toEqual(before);
    api.workspace('run-2').files.delete('notes.md');
    expect((await api.request('POST', '/runs/run-2/fork', { fromSeq: 4 }, alice)).status).toBe(202);
    expect(api.workspace('run-3').files.size).toBe(maxForkFiles);
  });

  it('counts a fork against the caller\'s running runs', async () => {
    const api = memoryApi({ maxRunningRuns: 1 });
    await twoTurns(api);
    const refused = await api.request('POST', '/runs/run-2/fork', { fromSeq: 4 }, alice);
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 429, code: 'TooManyRuns' });
    expect(api.conversations.count('run/run-3/single')).toBe(0);
  });
});
