/**
 * A run's event stream as the live stream's contract writes it (docs/events.md, "The event
 * stream"): the console's tests fold it, serve it over SSE, drop it and resume it.
 */
import type { StreamEvent } from '../../console/src/transcript.js';

export interface StreamScenario {
  runId: string;
  events: { id: string; event: StreamEvent }[];
}

const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });

/**
 * A single-mode run: a model call that was abandoned (retried), then text streamed in pieces, a
 * gated `write_file` approved by `local` whose content holds HTML, its result, a last answer, and
 * the end. Ids are `e1`, `e2`, … in order.
 */
export function approvedWriteScenario(runId = 'run-stream-1', options: { goal?: string; content?: string; answer?: string } = {}): StreamScenario {
  const goal = options.goal ?? 'Write the notes.';
  const content = options.content ?? '<script>window.__pwned = true</script> notes';
  const answer = options.answer ?? 'I wrote **notes.md**.';
  const input = { path: 'notes.md', content };
  const args = JSON.stringify(input);
  const attempt = '1763900000000-abc123';
  const m1 = `${runId}:single:1`;
  const m3 = `${runId}:single:3`;
  const custom = (name: string, value: Record<string, unknown>): StreamEvent => ({ type: 'CUSTOM', name, value });
  const list: StreamEvent[] = [
    { type: 'RUN_STARTED', threadId: runId, runId },
    custom('stepwise.run', { runId, mode: 'single', goal, createdAt: '2026-11-23T10:00:00.000Z' }),
    { type: 'STEP_STARTED', stepName: 'single' },
    { type: 'TEXT_MESSAGE_START', messageId: `${m1}:0:${attempt}`, role: 'assistant' },
    { type: 'TEXT_MESSAGE_CONTENT', messageId: `${m1}:0:${attempt}`, delta: 'Let me thi' },
    { type: 'TEXT_MESSAGE_END', messageId: `${m1}:0:${attempt}` },
    custom('stepwise.attempt_abandoned', { messageId: `${m1}:${attempt}` }),
    { type: 'TEXT_MESSAGE_START', messageId: `${m1}:0`, role: 'assistant' },
    { type: 'TEXT_MESSAGE_CONTENT', messageId: `${m1}:0`, delta: 'I will write ' },
    { type: 'TEXT_MESSAGE_CONTENT', messageId: `${m1}:0`, delta: 'the notes.' },
    { type: 'TEXT_MESSAGE_END', messageId: `${m1}:0` },
    { type: 'TOOL_CALL_START', toolCallId: 'toolu_w', toolCallName: 'write_file', parentMessageId: m1 },
    { type: 'TOOL_CALL_ARGS', toolCallId: 'toolu_w', delta: args.slice(0, 20) },
    { type: 'TOOL_CALL_ARGS', toolCallId: 'toolu_w', delta: args.slice(20) },
    { type: 'TOOL_CALL_END', toolCallId: 'toolu_w' },
    custom('stepwise.usage', { agent: 'single', seq: 1, usage: usage(1200, 40), estimatedCostUsd: 0.0042 }),
    custom('stepwise.approval_requested', { toolCallId: 'toolu_w', tool: 'write_file', input, agent: 'single' }),
    custom('stepwise.approval_decided', { toolCallId: 'toolu_w', decision: 'approve', decidedBy: 'local' }),
    { type: 'TOOL_CALL_RESULT', messageId: `${m1}.r0`, toolCallId: 'toolu_w', content: `Wrote ${content.length} bytes to notes.md.`, role: 'tool' },
    custom('stepwise.tool_result', { toolCallId: 'toolu_w', isError: false, ran: true }),
    { type: 'TEXT_MESSAGE_START', messageId: `${m3}:0`, role: 'assistant' },
    { type: 'TEXT_MESSAGE_CONTENT', messageId: `${m3}:0`, delta: answer },
    { type: 'TEXT_MESSAGE_END', messageId: `${m3}:0` },
    custom('stepwise.usage', { agent: 'single', seq: 3, usage: usage(1300, 12), estimatedCostUsd: 0.0041 }),
    { type: 'STEP_FINISHED', stepName: 'single' },
    custom('stepwise.run_ended', {
      status: 'succeeded',
      phase: 'complete',
      usage: usage(2500, 52),
      estimatedCostUsd: 0.0083,
      result: { response: answer, actionsTaken: [`write_file ${args}`] },
    }),
    { type: 'RUN_FINISHED', threadId: runId, runId, result: { response: answer, actionsTaken: [`write_file ${args}`] } },
  ];
  return { runId, events: list.map((event, i) => ({ id: `e${i + 1}`, event })) };
}

/** Events written as a `text/event-stream` body. */
export function sseBody(events: { id: string; event: StreamEvent }[]): string {
  return events.map(({ id, event }) => `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`).join('');
}
