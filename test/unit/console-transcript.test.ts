import { EventSchemas } from '@ag-ui/core/schemas';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type MessageRecord, type RunRecord, snapshotEvents } from '../../console/src/snapshot.js';
import { type Transcript, applyEvent, emptyTranscript, foldEvents, inputOf, statusOf, toolCalls, waitingCalls } from '../../console/src/transcript.js';
import { approvedWriteScenario } from '../support/console-events.js';

const scenario = approvedWriteScenario();
const content = '<script>window.__pwned = true</script> notes';
const input = { path: 'notes.md', content };

/** What a transcript shows, without its bookkeeping. */
const shown = (t: Transcript) => ({ run: t.run, sections: t.sections, phase: t.phase, plan: t.plan, usage: t.usage, costUsd: t.costUsd, ended: t.ended, finished: t.finished });

function fold(events: { id: string; event: Parameters<typeof applyEvent>[1] }[], start = emptyTranscript()): Transcript {
  return events.reduce((t, { id, event }) => applyEvent(t, event, id), start);
}

describe('the transcript fold', () => {
  it('writes the contract’s events as AG-UI events', () => {
    for (const { event } of scenario.events) expect(EventSchemas.safeParse(event).success, JSON.stringify(event)).toBe(true);
  });

  it('shows a run’s text, its gated call with the decision and result, usage and the end', () => {
    const t = fold(scenario.events);
    expect(t.run).toEqual({ runId: 'run-stream-1', mode: 'single', goal: 'Write the notes.', createdAt: '2026-11-23T10:00:00.000Z' });
    expect(t.sections).toHaveLength(1);
    const [section] = t.sections;
    expect(section?.agent).toBe('single');
    expect(section?.finished).toBe(true);
    expect(section?.items.map((i) => [i.kind, i.id])).toEqual([
      ['text', 'run-stream-1:single:1:0:1763900000000-abc123'],
      ['text', 'run-stream-1:single:1:0'],
      ['tool', 'toolu_w'],
      ['usage', 'usage:single:1'],
      ['text', 'run-stream-1:single:3:0'],
      ['usage', 'usage:single:3'],
    ]);
    expect(section?.items[0]).toEqual({ kind: 'text', id: 'run-stream-1:single:1:0:1763900000000-abc123', text: 'Let me thi', open: false, abandoned: true });
    expect(section?.items[1]).toEqual({ kind: 'text', id: 'run-stream-1:single:1:0', text: 'I will write the notes.', open: false, abandoned: false });
    expect(section?.items[2]).toEqual({
      kind: 'tool',
      id: 'toolu_w',
      name: 'write_file',
      args: JSON.stringify(input),
      argsDone: true,
      parentMessageId: 'run-stream-1:single:1',
      approval: { input, decision: 'approve', decidedBy: 'local' },
      result: { content: `Wrote ${content.length} bytes to notes.md.`, isError: false, ran: true },
      abandoned: false,
    });
    expect(inputOf(toolCalls(t)[0] ?? { args: '' })).toEqual(input);
    expect(t.usage).toEqual({ inputTokens: 2500, outputTokens: 52, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
    expect(t.costUsd).toBeCloseTo(0.0083, 10);
    expect(t.ended).toMatchObject({ status: 'succeeded', phase: 'complete', estimatedCostUsd: 0.0083, result: { response: 'I wrote **notes.md**.' } });
    expect(t.finished).toEqual({ outcome: 'succeeded' });
    expect(statusOf(t)).toBe('succeeded');
    expect(t.lastEventId).toBe(`e${scenario.events.length}`);
  });

  it('lists a call as waiting from its request until its decision', () => {
    const requested = scenario.events.findIndex(({ event }) => event.name === 'stepwise.approval_requested');
    const before = fold(scenario.events.slice(0, requested));
    const asked = fold(scenario.events.slice(0, requested + 1));
    const decided = fold(scenario.events.slice(0, requested + 2));
    expect(waitingCalls(before)).toEqual([]);
    expect(waitingCalls(asked).map((c) => [c.id, c.name, c.agent])).toEqual([['toolu_w', 'write_file', 'single']]);
    expect(waitingCalls(decided)).toEqual([]);
    expect(statusOf(asked)).toBe('running');
  });

  it('shows every event once however a resumed stream overlaps what was seen (no duplicate, no gap)', () => {
    const whole = shown(fold(scenario.events));
    fc.assert(
      fc.property(fc.nat(scenario.events.length), fc.nat(scenario.events.length), (cut, overlap) => {
        const first = fold(scenario.events.slice(0, cut));
        const resumed = fold(scenario.events.slice(Math.max(0, cut - overlap)), first);
        expect(shown(resumed)).toEqual(whole);
        expect(resumed.events).toBe(scenario.events.length);
      }),
    );
  });

  it('never starts a message or a call twice, even for an event without an id', () => {
    const start = scenario.events.find(({ event }) => event.type === 'TEXT_MESSAGE_START' && event.messageId === 'run-stream-1:single:1:0');
    const call = scenario.events.find(({ event }) => event.type === 'TOOL_CALL_START');
    let t = fold(scenario.events);
    t = applyEvent(t, start?.event ?? { type: 'NONE' });
    t = applyEvent(t, call?.event ?? { type: 'NONE' });
    t = applyEvent(t, { type: 'STEP_STARTED', stepName: 'single' });
    expect(t.sections.flatMap((s) => s.items).filter((i) => i.id === 'run-stream-1:single:1:0' || i.id === 'toolu_w')).toHaveLength(2);
  });

  it('ends failed and cancelled runs as the stream says', () => {
    expect(statusOf(foldEvents([{ type: 'RUN_ERROR', message: 'Too many', code: 'MaxIterationsExceeded' }]))).toBe('failed');
    expect(foldEvents([{ type: 'RUN_ERROR', message: 'Too many', code: 'MaxIterationsExceeded' }]).finished).toEqual({
      outcome: 'failed',
      message: 'Too many',
      code: 'MaxIterationsExceeded',
    });
    expect(foldEvents([{ type: 'RUN_FINISHED', threadId: 't', runId: 'r', outcome: { type: 'cancelled' } }]).finished).toEqual({ outcome: 'cancelled' });
  });
});

describe('the REST snapshot', () => {
  const run: RunRecord = {
    runId: 'run-stream-1',
    mode: 'single',
    goal: 'Write the notes.',
    status: 'succeeded',
    phase: 'complete',
    result: { response: 'I wrote **notes.md**.', actionsTaken: [`write_file ${JSON.stringify(input)}`] },
    usage: { inputTokens: 2500, outputTokens: 52, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    estimatedCostUsd: 0.0083,
    createdAt: '2026-11-23T10:00:00.000Z',
    updatedAt: '2026-11-23T10:00:09.000Z',
    waitingFor: [],
    decisions: [{ toolUseId: 'toolu_w', name: 'write_file', decision: 'approve', decidedBy: 'local' }],
  };
  const messages: MessageRecord[] = [
    { seq: 0, agent: 'single', role: 'user', content: [{ type: 'text', text: 'Write the notes.' }] },
    {
      seq: 1,
      agent: 'single',
      role: 'assistant',
      content: [
        { type: 'text', text: 'I will write the notes.' },
        { type: 'tool_use', id: 'toolu_w', name: 'write_file', input },
      ],
    },
    { seq: 2, agent: 'single', role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_w', content: `Wrote ${content.length} bytes to notes.md.` }] },
    { seq: 3, agent: 'single', role: 'assistant', content: [{ type: 'text', text: 'I wrote **notes.md**.' }] },
  ];

  it('is written as AG-UI events', () => {
    for (const event of snapshotEvents(run, messages)) expect(EventSchemas.safeParse(event).success, JSON.stringify(event)).toBe(true);
  });

  it('folds to what the live stream shows of the same run, but the live extras (usage per message, abandoned attempts)', () => {
    const live = fold(scenario.events);
    const rest = foldEvents(snapshotEvents(run, messages));
    const kept = (t: Transcript) => t.sections.map((s) => ({ ...s, items: s.items.filter((i) => i.kind !== 'usage' && !(i.kind === 'text' && i.abandoned)) }));
    expect(kept(rest)).toEqual(
      kept(live).map((s) => ({
        ...s,
        // The REST record has no approval input of its own; the call's input is the request's.
        items: s.items.map((i) => (i.kind === 'tool' ? { ...i, approval: { ...i.approval, input } } : i)),
      })),
    );
    expect(rest.run).toEqual(live.run);
    expect(rest.ended).toEqual(live.ended);
    expect(rest.finished).toEqual(live.finished);
  });

  it('shows the calls a running run waits on, and leaves the step open', () => {
    const waiting: RunRecord = {
      ...run,
      status: 'running',
      phase: 'executing',
      waitingFor: [{ toolUseId: 'toolu_w', name: 'write_file', input }],
      decisions: [],
    };
    const t = foldEvents(snapshotEvents(waiting, messages.slice(0, 2)));
    expect(waitingCalls(t).map((c) => c.id)).toEqual(['toolu_w']);
    expect(t.sections[0]?.finished).toBe(false);
    expect(statusOf(t)).toBe('running');
  });

  it('shows both agents of a multi-agent run with their phases and the plan, and a denial as not run', () => {
    const plan = { goal: 'G', steps: [{ description: 'Write it', action: 'create_file' }] };
    const multi: RunRecord = {
      ...run,
      mode: 'multi',
      status: 'failed',
      phase: 'failed',
      plan,
      error: { code: 'MaxIterationsExceeded', message: 'The coder reached 3 iterations.', agent: 'coder' },
      decisions: [{ toolUseId: 'toolu_c', name: 'write_file', decision: 'deny', reason: 'Not there.', decidedBy: 'rev' }],
    };
    const t = foldEvents(
      snapshotEvents(multi, [
        { seq: 1, agent: 'architect', role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_p', name: 'finish_plan', input: plan }] },
        { seq: 1, agent: 'coder', role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_c', name: 'write_file', input }] },
        { seq: 2, agent: 'coder', role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_c', content: 'A reviewer denied this tool call: Not there.', is_error: true }] },
      ]),
    );
    expect(t.sections.map((s) => [s.agent, s.phase, s.finished])).toEqual([
      ['architect', 'planning', true],
      ['coder', 'executing', true],
    ]);
    expect(t.plan).toEqual(plan);
    expect(toolCalls(t).find((c) => c.id === 'toolu_c')).toMatchObject({
      approval: { decision: 'deny', decidedBy: 'rev', reason: 'Not there.' },
      result: { isError: true, ran: false },
    });
    expect(t.finished).toEqual({ outcome: 'failed', message: 'The coder reached 3 iterations.', code: 'MaxIterationsExceeded' });
  });
});
