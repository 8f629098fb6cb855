import { type AGUIEvent, EventType } from '@ag-ui/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ContentBlock } from '../../functions/core/model/messages.js';
import { InvalidCursor, type Run } from '../../functions/core/runs/types.js';
import { RunEventReader } from '../../functions/core/stream/reader.js';
import { defaultFollowSettings, followRun } from '../../functions/core/stream/follow.js';
import { type PositionedEvent } from '../../functions/core/stream/types.js';
import { comparePositions, encodeCursor, parseCursor } from '../../functions/core/stream/cursor.js';
import { newRun } from '../support/memory.js';
import { World, aguiProblems, messageKey, randomSource, readAll, resultKey, scenario, worldOf } from '../support/stream-world.js';

/** One line per event, the way a person reads the stream. */
function brief(event: AGUIEvent): string {
  switch (event.type) {
    case EventType.TEXT_MESSAGE_START:
    case EventType.TEXT_MESSAGE_END:
      return `${event.type} ${event.messageId}`;
    case EventType.TEXT_MESSAGE_CONTENT:
      return `${event.type} ${event.messageId}: ${event.delta}`;
    case EventType.TOOL_CALL_START:
      return `${event.type} ${event.toolCallId} ${event.toolCallName} in ${event.parentMessageId}`;
    case EventType.TOOL_CALL_ARGS:
      return `${event.type} ${event.toolCallId}: ${event.delta}`;
    case EventType.TOOL_CALL_END:
      return `${event.type} ${event.toolCallId}`;
    case EventType.TOOL_CALL_RESULT:
      return `${event.type} ${event.toolCallId} as ${event.messageId}: ${typeof event.content === 'string' ? event.content : '[parts]'}`;
    case EventType.CUSTOM:
      return `${event.name}`;
    case EventType.STEP_STARTED:
    case EventType.STEP_FINISHED:
      return `${event.type} ${event.stepName}`;
    case EventType.RUN_FINISHED:
      return `${event.type}${event.outcome ? ` ${event.outcome.type}` : ''}`;
    case EventType.RUN_ERROR:
      return `${event.type} ${event.code}`;
    default:
      return event.type;
  }
}

const briefs = (events: PositionedEvent[]) => events.map((e) => brief(e.event));
const run1 = (extra: Partial<Run> = {}) => newRun('run-1', 'Write a.md.', { phase: 'idle', createdAt: '2026-01-01T00:00:00.000Z', ...extra });
const usage = { inputTokens: 100, outputTokens: 20, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

/** Stores a message (and its results) in a world's conversation. */
function put(world: World, conversation: string, seq: number, role: 'user' | 'assistant', content: ContentBlock[], runId = 'run-1') {
  world.conversation(conversation).set(messageKey(seq), {
    kind: 'message',
    seq,
    role,
    content,
    meta: { runId, iteration: 0, ...(role === 'assistant' ? { usage, model: 'claude-sonnet-4-5', stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn' } : {}) },
  });
}
function putResult(world: World, conversation: string, seq: number, index: number, toolUseId: string, content: string, ran = true) {
  world.conversation(conversation).set(resultKey(seq, index), {
    kind: 'result',
    seq,
    index,
    result: { type: 'tool_result', tool_use_id: toolUseId, content, ...(ran ? {} : { is_error: true }) },
    ...(ran ? {} : { ran: false }),
  });
}
const end = (world: World, patch: Partial<Run>) => Object.assign(world.run, { updatedAt: '2026-01-01T01:00:00.000Z', ...patch });

describe('the run event stream', () => {
  it('derives a multi-agent run with tools and a reviewer as AG-UI, in the contract\'s order', async () => {
    const world = new World(run1({ mode: 'multi', approvals: { tools: ['write_file'] } }));
    const plan = { goal: 'g', steps: [{ description: 'Write it', action: 'create_file' }] };
    put(world, 'run/run-1/architect', 0, 'user', [{ type: 'text', text: 'Write a.md.' }]);
    put(world, 'run/run-1/architect', 1, 'assistant', [{ type: 'text', text: 'Looking.' }, { type: 'tool_use', id: 'toolu_ls', name: 'list_files', input: {} }]);
    putResult(world, 'run/run-1/architect', 1, 0, 'toolu_ls', '(empty)');
    put(world, 'run/run-1/architect', 2, 'user', []);
    put(world, 'run/run-1/architect', 3, 'assistant', [{ type: 'tool_use', id: 'toolu_plan', name: 'finish_plan', input: plan }]);
    putResult(world, 'run/run-1/architect', 3, 0, 'toolu_plan', 'Plan accepted.');
    put(world, 'run/run-1/coder', 0, 'user', [{ type: 'text', text: 'The plan…' }]);
    put(world, 'run/run-1/coder', 1, 'assistant', [{ type: 'thinking', thinking: 'hm', signature: 's' }, { type: 'tool_use', id: 'toolu_w', name: 'write_file', input: { path: 'a.md', content: 'A' } }]);
    world.approvals.set('toolu_w', {
      runId: 'run-1', toolUseId: 'toolu_w', agent: 'coder', conversationId: 'run/run-1/coder', seq: 1, name: 'write_file', input: { path: 'a.md', content: 'A' },
      requestedAt: '2026-01-01T00:00:05.000Z', decision: 'approve', decidedBy: 'rita', decidedAt: '2026-01-01T00:00:06.000Z',
    });
    putResult(world, 'run/run-1/coder', 1, 0, 'toolu_w', 'Wrote a.md.');
    put(world, 'run/run-1/coder', 2, 'user', []);
    put(world, 'run/run-1/coder', 3, 'assistant', [{ type: 'text', text: 'Wrote a.md.' }]);
    end(world, { status: 'succeeded', phase: 'complete', plan, result: { response: 'Wrote a.md.', actionsTaken: ['write_file'] } });

    const events = await readAll(world);
    expect(aguiProblems(events.map((e) => e.event))).toEqual([]);
    expect(briefs(events)).toEqual([
      'RUN_STARTED',
      'stepwise.run',
      'STEP_STARTED architect',
      'stepwise.phase',
      'TEXT_MESSAGE_START run-1:architect:1:0',
      'TEXT_MESSAGE_CONTENT run-1:architect:1:0: Looking.',
      'TEXT_MESSAGE_END run-1:architect:1:0',
      'TOOL_CALL_START toolu_ls list_files in run-1:architect:1:0',
      'TOOL_CALL_ARGS toolu_ls: {}',
      'TOOL_CALL_END toolu_ls',
      'stepwise.usage',
      'TOOL_CALL_RESULT toolu_ls as run-1:architect:1.r0: (empty)',
      'stepwise.tool_result',
      'TOOL_CALL_START toolu_plan finish_plan in run-1:architect:3',
      `TOOL_CALL_ARGS toolu_plan: ${JSON.stringify(plan)}`,
      'TOOL_CALL_END toolu_plan',
      'stepwise.usage',
      'TOOL_CALL_RESULT toolu_plan as run-1:architect:3.r0: Plan accepted.',
      'stepwise.tool_result',
      'stepwise.plan',
      'STEP_FINISHED architect',
      'STEP_STARTED coder',
      'stepwise.phase',
      'TOOL_CALL_START toolu_w write_file in run-1:coder:1',
      'TOOL_CALL_ARGS toolu_w: {"path":"a.md","content":"A"}',
      'TOOL_CALL_END toolu_w',
      'stepwise.usage',
      'stepwise.approval_requested',
      'stepwise.approval_decided',
      'TOOL_CALL_RESULT toolu_w as run-1:coder:1.r0: Wrote a.md.',
      'stepwise.tool_result',
      'TEXT_MESSAGE_START run-1:coder:3:0',
      'TEXT_MESSAGE_CONTENT run-1:coder:3:0: Wrote a.md.',
      'TEXT_MESSAGE_END run-1:coder:3:0',
      'stepwise.usage',
      'STEP_FINISHED coder',
      'stepwise.run_ended',
      'RUN_FINISHED',
    ]);
    const value = (name: string) => events.map((e) => e.event).filter((e) => e.type === EventType.CUSTOM && e.name === name).map((e) => (e as { value: unknown }).value);
    expect(events[0]?.event).toEqual({ type: EventType.RUN_STARTED, threadId: 'run-1', runId: 'run-1' });
    expect(value('stepwise.phase')).toEqual([{ phase: 'planning', agent: 'architect' }, { phase: 'executing', agent: 'coder' }]);
    expect(value('stepwise.approval_requested')).toEqual([{ toolCallId: 'toolu_w', tool: 'write_file', input: { path: 'a.md', content: 'A' }, agent: 'coder', requestedAt: '2026-01-01T00:00:05.000Z' }]);
    expect(value('stepwise.approval_decided')).toEqual([{ toolCallId: 'toolu_w', decision: 'approve', decidedBy: 'rita', decidedAt: '2026-01-01T00:00:06.000Z' }]);
    expect(value('stepwise.usage')[0]).toEqual({ agent: 'architect', seq: 1, usage, model: 'claude-sonnet-4-5', estimatedCostUsd: (100 * 3 + 20 * 15) / 1e6 });
    expect(value('stepwise.plan')).toEqual([{ plan }]);
    expect(events.at(-1)?.event).toEqual({ type: EventType.RUN_FINISHED, threadId: 'run-1', runId: 'run-1', result: { response: 'Wrote a.md.', actionsTaken: ['write_file'] } });
    expect(events.map((e) => e.cursor).slice(0, 5)).toEqual(['h.0', 'h.1', 'architect.o.0', 'architect.o.1', 'architect.1.0']);
  });

  it('streams a retried model call: the first attempt abandoned under the message ids, the retry under its own, continued by the stored text', async () => {
    const world = new World(run1({ phase: 'executing' }));
    const conversation = 'run/run-1/single';
    put(world, conversation, 0, 'user', [{ type: 'text', text: 'Hi' }]);
    const attempt = (attempt: string, chunks: { block: number; kind: 'text'; delta: string }[]) =>
      world.live.set(`single#0000000001#${attempt}`, { runId: 'run-1', agent: 'single', seq: 1, attempt, chunks, updatedAt: '2026-01-01T00:00:01.000Z' });
    attempt('1767225600001-aaaaaa', [{ block: 0, kind: 'text', delta: 'Hel' }]);

    const reader = new RunEventReader(world, structuredClone(world.run));
    const live = briefs((await reader.tick()).events);
    expect(live.slice(-2)).toEqual(['TEXT_MESSAGE_START run-1:single:1:0', 'TEXT_MESSAGE_CONTENT run-1:single:1:0: Hel']);

    attempt('1767225601001-bbbbbb', [{ block: 0, kind: 'text', delta: 'Hello' }, { block: 0, kind: 'text', delta: ', wor' }]);
    put(world, conversation, 1, 'assistant', [{ type: 'text', text: 'Hello, world.' }]);
    end(world, { status: 'succeeded', phase: 'complete' });
    const rest: string[] = [];
    for (let i = 0; i < 5; i++) rest.push(...briefs((await reader.tick()).events));
    expect(rest).toEqual([
      'TEXT_MESSAGE_END run-1:single:1:0',
      'stepwise.attempt_abandoned',
      'TEXT_MESSAGE_START run-1:single:1:0:1767225601001-bbbbbb',
      'TEXT_MESSAGE_CONTENT run-1:single:1:0:1767225601001-bbbbbb: Hello',
      'TEXT_MESSAGE_CONTENT run-1:single:1:0:1767225601001-bbbbbb: , wor',
      'TEXT_MESSAGE_CONTENT run-1:single:1:0:1767225601001-bbbbbb: ld.',
      'TEXT_MESSAGE_END run-1:single:1:0:1767225601001-bbbbbb',
      'stepwise.usage',
      'STEP_FINISHED single',
      'stepwise.run_ended',
      'RUN_FINISHED',
    ]);
    expect(await readAll(world)).toEqual([...(await readAll(world)).slice(0, live.length), ...(await readAll(world)).slice(live.length)]);
    expect(briefs(await readAll(world))).toEqual([...live, ...rest]);
  });

  it('streams a call\'s arguments live and completes the model\'s own JSON to the stored input', async () => {
    const world = new World(run1({ phase: 'executing' }));
    put(world, 'run/run-1/single', 0, 'user', [{ type: 'text', text: 'Hi' }]);
    world.live.set('single#0000000001#1767225600001-aaaaaa', {
      runId: 'run-1', agent: 'single', seq: 1, attempt: '1767225600001-aaaaaa', updatedAt: '2026-01-01T00:00:01.000Z',
      chunks: [
        { block: 0, kind: 'text', delta: 'Writing.' },
        { block: 1, kind: 'tool_use', id: 'toolu_w', name: 'write_file', delta: '{"path": "a.md", "con' },
      ],
    });
    put(world, 'run/run-1/single', 1, 'assistant', [{ type: 'text', text: 'Writing.' }, { type: 'tool_use', id: 'toolu_w', name: 'write_file', input: { path: 'a.md', content: 'A "quoted" line' } }]);
    const events = briefs(await new RunEventReader(world, structuredClone(world.run)).tick().then((r) => r.events));
    expect(events.slice(3, 11)).toEqual([
      'TEXT_MESSAGE_START run-1:single:1:0',
      'TEXT_MESSAGE_CONTENT run-1:single:1:0: Writing.',
      'TEXT_MESSAGE_END run-1:single:1:0',
      'TOOL_CALL_START toolu_w write_file in run-1:single:1:0',
      'TOOL_CALL_ARGS toolu_w: {"path": "a.md", "con',
      'TOOL_CALL_ARGS toolu_w: tent":"A \\"quoted\\" line"}',
      'TOOL_CALL_END toolu_w',
      'stepwise.usage',
    ]);
  });

  it('shows the results of parallel calls in call order, whatever order they arrive in', async () => {
    const world = new World(run1({ phase: 'executing' }));
    const conversation = 'run/run-1/single';
    put(world, conversation, 0, 'user', [{ type: 'text', text: 'Add' }]);
    put(world, conversation, 1, 'assistant', [
      { type: 'tool_use', id: 'toolu_a', name: 'calculator', input: { operation: 'add', a: 1, b: 2 } },
      { type: 'tool_use', id: 'toolu_b', name: 'calculator', input: { operation: 'add', a: 3, b: 4 } },
    ]);
    const reader = new RunEventReader(world, structuredClone(world.run));
    await reader.tick();
    putResult(world, conversation, 1, 1, 'toolu_b', '7');
    expect(briefs((await reader.tick()).events)).toEqual([]);
    putResult(world, conversation, 1, 0, 'toolu_a', '3');
    expect(briefs((await reader.tick()).events)).toEqual([
      'TOOL_CALL_RESULT toolu_a as run-1:single:1.r0: 3',
      'stepwise.tool_result',
      'TOOL_CALL_RESULT toolu_b as run-1:single:1.r1: 7',
      'stepwise.tool_result',
    ]);
  });

  it('shows every call waiting for a reviewer at once, and each outcome in call order', async () => {
    const world = new World(run1({ phase: 'executing', approvals: { tools: ['write_file'] } }));
    const conversation = 'run/run-1/single';
    put(world, conversation, 0, 'user', [{ type: 'text', text: 'Write' }]);
    put(world, conversation, 1, 'assistant', [
      { type: 'tool_use', id: 'toolu_c', name: 'calculator', input: { operation: 'add', a: 1, b: 2 } },
      { type: 'tool_use', id: 'toolu_a', name: 'write_file', input: { path: 'a.md', content: 'A' } },
      { type: 'tool_use', id: 'toolu_b', name: 'write_file', input: { path: 'b.md', content: 'B' } },
    ]);
    const request = (id: string, seqIndex: number) =>
      world.approvals.set(id, { runId: 'run-1', toolUseId: id, agent: 'single', conversationId: conversation, seq: 1, name: 'write_file', input: { index: seqIndex }, requestedAt: 'a' });
    const reader = new RunEventReader(world, structuredClone(world.run));
    // Nothing is known of the first call yet (gated or not): the requests wait for it.
    expect(briefs((await reader.tick()).events).filter((b) => b.startsWith('stepwise.approval'))).toEqual([]);
    putResult(world, conversation, 1, 0, 'toolu_c', '3');
    request('toolu_a', 1);
    request('toolu_b', 2);
    const shown = (await reader.tick()).events;
    expect(shown.filter((e) => e.event.type === EventType.CUSTOM).map((e) => [brief(e.event), (e.event as { value: { toolCallId: string } }).value.toolCallId])).toEqual([
      ['stepwise.approval_requested', 'toolu_a'],
      ['stepwise.approval_requested', 'toolu_b'],
      ['stepwise.tool_result', 'toolu_c'],
    ]);
    // The second call decided first: shown once the first call has its outcome.
    Object.assign(world.approvals.get('toolu_b') ?? {}, { decision: 'approve', decidedBy: 'rita', decidedAt: 'b' });
    putResult(world, conversation, 1, 2, 'toolu_b', 'wrote b.md');
    expect((await reader.tick()).events).toEqual([]);
    Object.assign(world.approvals.get('toolu_a') ?? {}, { decision: 'deny', decidedBy: 'rita', decidedAt: 'c' });
    putResult(world, conversation, 1, 1, 'toolu_a', 'denied', false);
    // The decision is read first (only the run partition is read while a call waits), the result on the next tick.
    const rest = [...(await reader.tick()).events, ...(await reader.tick()).events].map((e) => brief(e.event));
    expect(rest.slice(0, 6)).toEqual([
      'stepwise.approval_decided',
      'TOOL_CALL_RESULT toolu_a as run-1:single:1.r1: denied',
      'stepwise.tool_result',
      'stepwise.approval_decided',
      'TOOL_CALL_RESULT toolu_b as run-1:single:1.r2: wrote b.md',
      'stepwise.tool_result',
    ]);
  });

  it('says why a call waits that no gate names: the run read untrusted content and the call sends data out', async () => {
    const world = new World(run1({ phase: 'executing' }));
    const conversation = 'run/run-1/single';
    put(world, conversation, 0, 'user', [{ type: 'text', text: 'Post it' }]);
    put(world, conversation, 1, 'assistant', [{ type: 'tool_use', id: 'toolu_p', name: 'chat__post', input: { text: 'hi' } }]);
    world.approvals.set('toolu_p', { runId: 'run-1', toolUseId: 'toolu_p', agent: 'single', conversationId: conversation, seq: 1, name: 'chat__post', input: { text: 'hi' }, requestedAt: '2026-01-01T00:00:05.000Z', gate: 'egress-after-untrusted' });
    const events = (await new RunEventReader(world, structuredClone(world.run)).tick()).events.map((e) => e.event);
    const requested = events.filter((e) => e.type === EventType.CUSTOM && e.name === 'stepwise.approval_requested').map((e) => (e as { value: unknown }).value);
    expect(requested).toEqual([expect.objectContaining({ toolCallId: 'toolu_p', gate: 'egress-after-untrusted' })]);
  });

  it('shows an approval request while the call waits, reading only the run partition until a decision', async () => {
    const world = new World(run1({ phase: 'executing', approvals: { tools: ['write_file'] } }));
    const conversation = 'run/run-1/single';
    put(world, conversation, 0, 'user', [{ type: 'text', text: 'Write' }]);
    put(world, conversation, 1, 'assistant', [{ type: 'tool_use', id: 'toolu_w', name: 'write_file', input: { path: 'a.md', content: 'A' } }]);
    world.approvals.set('toolu_w', { runId: 'run-1', toolUseId: 'toolu_w', agent: 'single', conversationId: conversation, seq: 1, name: 'write_file', input: { path: 'a.md', content: 'A' }, requestedAt: '2026-01-01T00:00:05.000Z' });
    const reader = new RunEventReader(world, structuredClone(world.run));
    expect(briefs((await reader.tick()).events).slice(-2)).toEqual(['stepwise.usage', 'stepwise.approval_requested']);
    const before = { ...world.reads };
    for (let i = 0; i < 10; i++) expect((await reader.tick()).events).toEqual([]);
    expect({ conversation: world.reads.conversation - before.conversation, live: world.reads.live - before.live, run: world.reads.run - before.run }).toEqual({ conversation: 0, live: 0, run: 10 });

    Object.assign(world.approvals.get('toolu_w') ?? {}, { decision: 'deny', reason: 'not now', decidedBy: 'rita', decidedAt: '2026-01-01T00:00:09.000Z' });
    expect(briefs((await reader.tick()).events)).toEqual(['stepwise.approval_decided']);
    putResult(world, conversation, 1, 0, 'toolu_w', 'A reviewer denied this tool call: not now', false);
    const answered = (await reader.tick()).events;
    expect(answered.map((e) => e.event)).toEqual([
      { type: EventType.TOOL_CALL_RESULT, messageId: 'run-1:single:1.r0', toolCallId: 'toolu_w', content: 'A reviewer denied this tool call: not now', role: 'tool' },
      { type: EventType.CUSTOM, name: 'stepwise.tool_result', value: { toolCallId: 'toolu_w', isError: true, ran: false } },
    ]);
  });

  it('never shows a result as ungated when its approval was opened before the result but read after it', async () => {
    const world = new World(run1({ phase: 'executing', approvals: { tools: ['write_file'] } }));
    const conversation = 'run/run-1/single';
    put(world, conversation, 0, 'user', [{ type: 'text', text: 'Write' }]);
    put(world, conversation, 1, 'assistant', [{ type: 'tool_use', id: 'toolu_w', name: 'write_file', input: {} }]);
    const reader = new RunEventReader(world, structuredClone(world.run));
    await reader.tick();
    // The approval and the result land while the conversation is being read (after it, for the reader).
    world.pending = [
      (w) => w.approvals.set('toolu_w', { runId: 'run-1', toolUseId: 'toolu_w', agent: 'single', conversationId: conversation, seq: 1, name: 'write_file', input: {}, requestedAt: 'a', decision: 'approve', decidedBy: 'rita', decidedAt: 'b' }),
      (w) => putResult(w, conversation, 1, 0, 'toolu_w', 'ok'),
    ];
    world.pace = () => 1;
    const shown: string[] = [];
    for (let i = 0; i < 4; i++) shown.push(...briefs((await reader.tick()).events));
    expect(shown).toEqual(['stepwise.approval_requested', 'stepwise.approval_decided', 'TOOL_CALL_RESULT toolu_w as run-1:single:1.r0: ok', 'stepwise.tool_result']);
  });

  it.each([
    ['cancelled', { status: 'cancelled', phase: 'cancelled' }, ['STEP_FINISHED single', 'stepwise.run_ended', 'RUN_FINISHED cancelled']],
    ['failed', { status: 'failed', phase: 'failed', error: { code: 'MaxIterationsExceeded', message: 'Stopped after 1 iteration.' } }, ['STEP_FINISHED single', 'stepwise.run_ended', 'RUN_ERROR MaxIterationsExceeded']],
  ] as const)('ends a %s run after what it stored, its answer under way abandoned, with the outcome', async (_name, outcome, last) => {
    const world = new World(run1({ phase: 'executing' }));
    const conversation = 'run/run-1/single';
    put(world, conversation, 0, 'user', [{ type: 'text', text: 'Go' }]);
    put(world, conversation, 1, 'assistant', [{ type: 'tool_use', id: 'toolu_a', name: 'calculator', input: {} }]);
    // The next model call was streaming when the run ended.
    world.live.set('single#0000000003#1767225600001-aaaaaa', { runId: 'run-1', agent: 'single', seq: 3, attempt: '1767225600001-aaaaaa', updatedAt: 'x', chunks: [{ block: 0, kind: 'text', delta: 'Partly' }] });
    end(world, outcome);
    const events = await readAll(world);
    expect(aguiProblems(events.map((e) => e.event))).toEqual([]);
    expect(briefs(events).slice(-9)).toEqual([
      'TOOL_CALL_END toolu_a',
      'stepwise.usage',
      'TEXT_MESSAGE_START run-1:single:3:0',
      'TEXT_MESSAGE_CONTENT run-1:single:3:0: Partly',
      'TEXT_MESSAGE_END run-1:single:3:0',
      'stepwise.attempt_abandoned',
      ...last,
    ]);
    const error = events.at(-1)?.event;
    if (outcome.status === 'failed') expect(error).toEqual({ type: EventType.RUN_ERROR, message: 'Stopped after 1 iteration.', code: 'MaxIterationsExceeded' });
    else expect(error).toEqual({ type: EventType.RUN_FINISHED, threadId: 'run-1', runId: 'run-1', outcome: { type: 'cancelled' } });
  });

  it('shows only this run\'s turns of a session conversation', async () => {
    const world = new World(run1({ phase: 'executing', sessionId: 'chat' }));
    put(world, 'session/chat', 0, 'user', [{ type: 'text', text: 'Earlier' }], 'run-0');
    put(world, 'session/chat', 1, 'assistant', [{ type: 'text', text: 'Earlier answer' }], 'run-0');
    put(world, 'session/chat', 2, 'user', [{ type: 'text', text: 'Now' }]);
    put(world, 'session/chat', 3, 'assistant', [{ type: 'text', text: 'Now answer' }]);
    end(world, { status: 'succeeded', phase: 'complete' });
    const events = await readAll(world);
    expect(briefs(events).filter((b) => b.startsWith('TEXT_MESSAGE_CONTENT'))).toEqual(['TEXT_MESSAGE_CONTENT run-1:single:3:0: Now answer']);
    expect(events[0]?.event).toEqual({ type: EventType.RUN_STARTED, threadId: 'chat', runId: 'run-1' });
  });

  it('emits while the store grows exactly the events it derives from the finished store, however reads and writes interleave', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), fc.integer(), async (seed, paceSeed) => {
        const s = scenario(seed);
        const pace = randomSource(paceSeed);
        const world = worldOf(s);
        world.pace = () => pace.int(0, 3);
        const live = await readAll(world);
        expect(world.pending).toEqual([]);
        const final = await readAll(world);
        expect(live).toEqual(final);
        expect(aguiProblems(final.map((e) => e.event))).toEqual([]);
      }),
      // The example: a live attempt read before the message before it had been (the conversation grew between the two reads).
      { numRuns: 300, examples: [[1771837321, 28]] },
    );
  });

  it('gives a watcher that reconnects at any points the same events as one that never did', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), fc.integer(), async (seed, paceSeed) => {
        const s = scenario(seed);
        const r = randomSource(paceSeed);
        const world = worldOf(s);
        world.pace = () => r.int(0, 2);
        const got: PositionedEvent[] = [];
        let reader = new RunEventReader(world, structuredClone(world.run));
        for (let ticks = 0; ; ticks++) {
          if (ticks > 10_000) throw new Error('The stream did not end.');
          const result = await reader.tick();
          got.push(...result.events);
          if (result.done) break;
          // Reconnect: a new reader (another process), resuming after the last event received.
          if (r.chance(0.3)) reader = new RunEventReader(world, (await world.runWithApprovals()).run as Run, got.at(-1)?.cursor);
        }
        expect(got).toEqual(await readAll(world));
      }),
      { numRuns: 200 },
    );
  });

  it('resumes after every cursor with exactly the events that follow it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (seed) => {
        const world = worldOf(scenario(seed));
        world.settle();
        const all = await readAll(world);
        for (const [i, { cursor }] of all.entries()) expect(await readAll(world, cursor)).toEqual(all.slice(i + 1));
      }),
      { numRuns: 60 },
    );
  });

  it('adds up each stored answer: its text blocks from their deltas, its calls\' arguments to their inputs', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (seed) => {
        const world = worldOf(scenario(seed, { cut: 0 }));
        world.settle();
        const events = (await readAll(world)).map((e) => e.event);
        const texts = new Map<string, string>();
        const args = new Map<string, string>();
        const started: string[] = [];
        for (const e of events) {
          if (e.type === EventType.TEXT_MESSAGE_START) started.push(e.messageId);
          if (e.type === EventType.TEXT_MESSAGE_CONTENT) texts.set(e.messageId, (texts.get(e.messageId) ?? '') + e.delta);
          if (e.type === EventType.TOOL_CALL_ARGS) args.set(e.toolCallId, (args.get(e.toolCallId) ?? '') + e.delta);
        }
        for (const [conversation, items] of world.conversations) {
          const agent = conversation.split('/').at(-1) === 'architect' ? 'architect' : conversation.endsWith('coder') ? 'coder' : 'single';
          for (const record of items.values()) {
            if (record.kind !== 'message' || record.role !== 'assistant' || record.meta.runId !== 'run-1') continue;
            record.content.forEach((block, index) => {
              if (block.type === 'text' && block.text !== '') {
                // The last text message shown for this block (abandoned attempts come before the answer).
                const id = started.findLast((m) => m === `run-1:${agent}:${record.seq}:${index}` || m.startsWith(`run-1:${agent}:${record.seq}:${index}:`));
                expect(id && texts.get(id)).toBe(block.text);
              }
              if (block.type === 'tool_use' && record.meta.stopReason !== 'max_tokens') {
                expect(JSON.parse(args.get(block.id as string) ?? 'null')).toStrictEqual(block.input);
              }
            });
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('cursors', () => {
  const agents = ['architect', 'coder'] as const;

  it('round-trips every position and orders them as their events', () => {
    const positions = [
      { group: { kind: 'header' }, n: 1 },
      { group: { kind: 'open', agent: 0 }, n: 0 },
      { group: { kind: 'slot', agent: 0, seq: 3 }, n: 12 },
      { group: { kind: 'slot', agent: 0, seq: 10 }, n: 0 },
      { group: { kind: 'close', agent: 0 }, n: 1 },
      { group: { kind: 'open', agent: 1 }, n: 1 },
      { group: { kind: 'end' }, n: 0 },
    ] as const;
    const cursors = positions.map((p) => encodeCursor(p, agents));
    expect(cursors).toEqual(['h.1', 'architect.o.0', 'architect.3.12', 'architect.10.0', 'architect.c.1', 'coder.o.1', 'e.0']);
    expect(cursors.map((c) => parseCursor(c, agents))).toEqual(positions);
    for (let i = 1; i < positions.length; i++) expect(comparePositions(positions[i - 1] as never, positions[i] as never)).toBeLessThan(0);
  });

  it.each(['', 'x', 'h', 'h.-1', 'h.01', 'single.3.0', 'coder.3', 'coder.3.0.1', 'coder.x.0', `coder.${'9'.repeat(11)}.0`, 'e.1e3', `h.${'1'.repeat(70)}`])(
    'refuses %j with InvalidCursor',
    (cursor) => {
      expect(() => parseCursor(cursor, agents)).toThrow(InvalidCursor);
    },
  );
});

describe('followRun', () => {
  /** A clock that moves only when the loop sleeps. */
  function fakeTime() {
    let t = 0;
    return { now: () => t, sleep: async (ms: number) => void (t += ms) };
  }

  async function watch(world: World, minutes: number, settings = defaultFollowSettings) {
    const time = fakeTime();
    const reader = new RunEventReader(world, structuredClone(world.run));
    const first = await reader.tick();
    const before = { ...world.reads };
    const kinds: string[] = [];
    for await (const out of followRun(reader, first, { ...settings, maxDurationMs: minutes * 60_000, signal: new AbortController().signal, ...time })) kinds.push(out.kind);
    const after = { conversation: world.reads.conversation - before.conversation, live: world.reads.live - before.live, run: world.reads.run - before.run };
    return { kinds, after, reads: after.conversation + after.live + after.run };
  }

  it('reads an idle run at most 60 times a minute (a run waiting for a model answer), and a run waiting for a reviewer 15', async () => {
    const thinking = new World(run1({ phase: 'executing' }));
    put(thinking, 'run/run-1/single', 0, 'user', [{ type: 'text', text: 'Go' }]);
    const idle = await watch(thinking, 10);
    expect(idle.reads / 10).toBeLessThanOrEqual(60);

    const waiting = new World(run1({ phase: 'executing', approvals: { tools: ['write_file'] } }));
    put(waiting, 'run/run-1/single', 0, 'user', [{ type: 'text', text: 'Go' }]);
    put(waiting, 'run/run-1/single', 1, 'assistant', [{ type: 'tool_use', id: 'toolu_w', name: 'write_file', input: {} }]);
    waiting.approvals.set('toolu_w', { runId: 'run-1', toolUseId: 'toolu_w', agent: 'single', conversationId: 'run/run-1/single', seq: 1, name: 'write_file', input: {}, requestedAt: 'a' });
    const reviewer = await watch(waiting, 10);
    expect(reviewer.reads / 10).toBeLessThanOrEqual(16);
    expect(reviewer.after).toEqual({ conversation: 0, live: 0, run: reviewer.reads });
  });

  it('sends a heartbeat every 15 s of silence and ends at the longest duration with the last cursor', async () => {
    const world = new World(run1({ phase: 'executing' }));
    put(world, 'run/run-1/single', 0, 'user', [{ type: 'text', text: 'Go' }]);
    const { kinds } = await watch(world, 1);
    expect(kinds.filter((k) => k === 'event')).toHaveLength(3);
    expect(kinds.filter((k) => k === 'heartbeat')).toHaveLength(3);
    expect(kinds.at(-1)).toBe('limit');
    const reader = new RunEventReader(world, structuredClone(world.run));
    const first = await reader.tick();
    const outs = [];
    for await (const out of followRun(reader, first, { ...defaultFollowSettings, maxDurationMs: 1000, signal: new AbortController().signal, ...fakeTime() })) outs.push(out);
    expect(outs.at(-1)).toEqual({ kind: 'limit', cursor: 'single.o.0' });
  });

  it('stops reading when the client goes away', async () => {
    const world = new World(run1({ phase: 'executing' }));
    const reader = new RunEventReader(world, structuredClone(world.run));
    const stop = new AbortController();
    const time = fakeTime();
    const seen = [];
    for await (const out of followRun(reader, await reader.tick(), { ...defaultFollowSettings, signal: stop.signal, now: time.now, sleep: async (ms) => { await time.sleep(ms); if (time.now() > 5_000) stop.abort(); } })) seen.push(out);
    const reads = world.reads.run;
    expect(seen.every((o) => o.kind === 'event')).toBe(true);
    expect(reads).toBeLessThan(20);
  });
});
