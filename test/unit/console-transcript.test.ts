import { EventSchemas } from '@ag-ui/core/schemas';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
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

  it('keeps why a call waits when no gate names its tool (egress after untrusted content)', () => {
    const requested = scenario.events.findIndex(({ event }) => event.name === 'stepwise.approval_requested');
    const events = scenario.events.slice(0, requested + 1).map((e, i) =>
      i === requested ? { ...e, event: { ...e.event, value: { ...(e.event.value as object), gate: 'egress-after-untrusted' } } } : e,
    );
    expect(waitingCalls(fold(events)).map((c) => c.approval?.gate)).toEqual(['egress-after-untrusted']);
    expect(waitingCalls(fold(scenario.events.slice(0, requested + 1))).map((c) => c.approval?.gate)).toEqual([undefined]);
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

  it('keeps the agent or workflow a run follows, with its version, and ignores one that is not a name and a version', () => {
    const runEvent = (value: Record<string, unknown>) => foldEvents([{ type: 'CUSTOM', name: 'stepwise.run', value: { runId: 'r', mode: 'single', ...value } }]).run;
    expect(runEvent({ agent: { name: 'proofreader', version: '2234e2507880' } })).toEqual({ runId: 'r', mode: 'single', agent: { name: 'proofreader', version: '2234e2507880' } });
    expect(runEvent({ workflow: { name: 'plan-and-build', version: '249c9bed2a7a' } })).toEqual({ runId: 'r', mode: 'single', workflow: { name: 'plan-and-build', version: '249c9bed2a7a' } });
    expect(runEvent({ agent: { name: 'proofreader' }, workflow: 'plan-and-build' })).toEqual({ runId: 'r', mode: 'single' });
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
