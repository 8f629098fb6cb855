/**
 * The CLI's stream reader against a loopback server that speaks server-sent events and drops
 * the connection on purpose: what it prints after any number of drops equals what it prints
 * when nothing drops, and it resumes with the last event id it saw.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError, cliClient } from '../../bin/cli/client.js';
import { watchEvents } from '../../bin/cli/watch.js';

const runId = 'run-watch';

/** A single-agent run that writes text, calls a tool that fails, waits for a reviewer and ends. */
const events: Record<string, unknown>[] = [
  { type: 'RUN_STARTED', threadId: runId, runId },
  { type: 'STEP_STARTED', stepName: 'single' },
  { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Writing ' },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'the file.' },
  { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
  { type: 'TOOL_CALL_START', toolCallId: 't1', toolCallName: 'write_file', parentMessageId: 'm1' },
  { type: 'TOOL_CALL_ARGS', toolCallId: 't1', delta: '{"path":"a.md",' },
  { type: 'TOOL_CALL_ARGS', toolCallId: 't1', delta: '"content":"x"}' },
  { type: 'TOOL_CALL_END', toolCallId: 't1' },
  { type: 'CUSTOM', name: 'stepwise.approval_requested', value: { toolCallId: 't1', tool: 'write_file', input: { path: 'a.md', content: 'x' }, agent: 'single' } },
  { type: 'CUSTOM', name: 'stepwise.approval_decided', value: { toolCallId: 't1', decision: 'deny', decidedBy: 'ana', message: 'not now' } },
  { type: 'TOOL_CALL_RESULT', messageId: 'm1.r0', toolCallId: 't1', content: 'A reviewer denied this tool call: not now', role: 'tool' },
  { type: 'CUSTOM', name: 'stepwise.tool_result', value: { toolCallId: 't1', isError: true, ran: false } },
  { type: 'TEXT_MESSAGE_START', messageId: 'm2', role: 'assistant' },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm2', delta: 'Done.' },
  { type: 'TEXT_MESSAGE_END', messageId: 'm2' },
  { type: 'STEP_FINISHED', stepName: 'single' },
  { type: 'CUSTOM', name: 'stepwise.run_ended', value: { status: 'succeeded', phase: 'complete' } },
  { type: 'RUN_FINISHED', threadId: runId, runId },
];

const expected = [
  'phase executing · single',
  '  single: Writing the file.',
  '  → single: write_file a.md',
  `  ⏸ write_file a.md awaits approval: stepwise approve ${runId} t1 (or deny, with --reason "…")`,
  '  ✗ denied by ana: not now',
  '  ✗ single: A reviewer denied this tool call: not now',
  '  single: Done.',
  'phase complete',
  '',
].join('\n');

interface Fixture {
  url: string;
  /** The Last-Event-ID of each connection, in order. */
  resumedFrom: (string | undefined)[];
}

let server: Server | undefined;

/** Serves `events`; connection n ends after `dropAfter(n)` events (Infinity: never drops). */
async function serve(dropAfter: (connection: number) => number, answer?: (res: ServerResponse) => void): Promise<Fixture> {
  const resumedFrom: (string | undefined)[] = [];
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (answer) return answer(res);
    const lastId = req.headers['last-event-id'];
    resumedFrom.push(typeof lastId === 'string' ? lastId : undefined);
    const from = lastId === undefined ? 0 : Number(lastId) + 1;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const limit = dropAfter(resumedFrom.length - 1);
    const last = Math.min(events.length, from + limit);
    if (last === from) return res.destroy();
    for (let i = from; i < last; i++) {
      // The drop comes once the last event sent has left, as when a connection breaks mid-stream.
      res.write(`id: ${i}\ndata: ${JSON.stringify(events[i])}\n\n`, i === last - 1 && last < events.length ? () => res.destroy() : undefined);
    }
    if (last === events.length) res.end();
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, resumedFrom };
}

afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

async function watched(fixture: Fixture, options: Parameters<typeof watchEvents>[2] = {}): Promise<{ text: string; ids: (string | undefined)[]; end: Awaited<ReturnType<typeof watchEvents>> }> {
  let text = '';
  const ids: (string | undefined)[] = [];
  const end = await watchEvents(cliClient({ endpoint: fixture.url }), runId, {
    out: (piece) => (text += piece),
    onEvent: (id) => ids.push(id),
    backoffMs: 1,
    ...options,
  });
  return { text, ids, end };
}

describe('stepwise watch', () => {
  it('prints live text, tool calls, approvals and the end from one unbroken stream', async () => {
    const fixture = await serve(() => Infinity);
    const { text, end } = await watched(fixture);
    expect(text).toBe(expected);
    expect(end).toEqual({ ended: true, lastEventId: String(events.length - 1) });
    expect(fixture.resumedFrom).toEqual([undefined]);
  });

  it('prints the same after the connection drops after every event, resuming from the last id each time', async () => {
    const fixture = await serve(() => 1);
    const { text, ids } = await watched(fixture, { maxReconnects: 3 });
    expect(text).toBe(expected);
    expect(ids).toEqual(events.map((_, i) => String(i)));
    expect(fixture.resumedFrom).toEqual([undefined, ...events.slice(0, -1).map((_, i) => String(i))]);
  });

  it('prints the same when drops come at uneven places, including mid-message', async () => {
    const fixture = await serve((n) => [4, 0, 3, 7][n] ?? Infinity);
    const { text } = await watched(fixture);
    expect(text).toBe(expected);
  });

  it('starts after a given event id', async () => {
    const fixture = await serve(() => Infinity);
    const { ids } = await watched(fixture, { after: '15' });
    expect(fixture.resumedFrom).toEqual(['15']);
    expect(ids).toEqual(['16', '17', '18', '19']);
  });

  it('gives up after too many failed connections in a row', async () => {
    const fixture = await serve(() => 0);
    await expect(watched(fixture, { maxReconnects: 2 })).rejects.toBeInstanceOf(ApiError);
    expect(fixture.resumedFrom).toHaveLength(3);
  });

  it('does not retry an answer such as 404', async () => {
    let calls = 0;
    const fixture = await serve(
      () => Infinity,
      (res) => {
        calls += 1;
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'RunNotFound', message: 'No run run-watch.' } }));
      },
    );
    await expect(watched(fixture)).rejects.toMatchObject({ status: 404, code: 'RunNotFound' });
    expect(calls).toBe(1);
  });

  it('stops at its time limit while the run goes on, and says so', async () => {
    const fixture = await serve(
      () => Infinity,
      (res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`id: 0\ndata: ${JSON.stringify(events[0])}\n\n`);
      },
    );
    const { end } = await watched(fixture, { timeoutMs: 300 });
    expect(end).toEqual({ ended: false, lastEventId: '0' });
  });
});
