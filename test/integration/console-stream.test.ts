import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError, apiClient } from '../../console/src/api.js';
import { followStream } from '../../console/src/stream.js';
import { type StreamEvent, applyEvent, emptyTranscript } from '../../console/src/transcript.js';
import { approvedWriteScenario, sseBody } from '../support/console-events.js';

const scenario = approvedWriteScenario();

/** A server on loopback answering each request with `handle`; closed after each test. */
const servers: { close(): void }[] = [];
afterEach(() => servers.splice(0).forEach((s) => s.close()));
async function serve(handle: (req: IncomingMessage, res: ServerResponse, n: number) => void): Promise<string> {
  let n = 0;
  const server = createServer((req, res) => handle(req, res, n++));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push({ close: () => server.close() });
  server.on('connection', (socket) => servers.push({ close: () => socket.destroy() }));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The contract's resume: the events after `Last-Event-ID`. */
const after = (req: IncomingMessage) => {
  const last = req.headers['last-event-id'];
  const from = last ? scenario.events.findIndex((e) => e.id === last) + 1 : 0;
  return scenario.events.slice(from);
};

async function follow(base: string, options: { onConnection?: (state: string) => void } = {}) {
  const seen: { id: string | undefined; event: StreamEvent }[] = [];
  let t = emptyTranscript();
  const end = await followStream({
    api: apiClient({ base, authorization: () => 'Bearer token-1' }),
    runId: 'run-stream-1',
    signal: AbortSignal.timeout(10_000),
    backoffMs: 5,
    onEvent: (event, id) => {
      seen.push({ id, event });
      t = applyEvent(t, event, id);
    },
    ...(options.onConnection ? { onConnection: options.onConnection } : {}),
  });
  return { end, seen, t };
}

describe('followStream', () => {
  it('reads a run’s events in order, with the caller’s token, and stops at its end', async () => {
    const requests: IncomingMessage['headers'][] = [];
    const base = await serve((req, res) => {
      requests.push(req.headers);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Sent in pieces that split events and lines, as a network does.
      const body = sseBody(scenario.events);
      for (let i = 0; i < body.length; i += 37) res.write(body.slice(i, i + 37));
      res.end();
    });
    const { end, seen } = await follow(base);
    expect(end).toBe('ended');
    expect(seen.map((s) => s.id)).toEqual(scenario.events.map((e) => e.id));
    expect(seen.map((s) => s.event)).toEqual(scenario.events.map((e) => e.event));
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ authorization: 'Bearer token-1', accept: 'text/event-stream' });
    expect(requests[0]?.['last-event-id']).toBeUndefined();
  });

  it('resumes a dropped stream from the last event it applied: each event once, none missed', async () => {
    const lastIds: (string | undefined)[] = [];
    const states: string[] = [];
    const base = await serve((req, res, n) => {
      lastIds.push(req.headers['last-event-id'] as string | undefined);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const rest = after(req);
      if (n === 0) {
        // Seven events and half of the eighth, then the connection drops.
        const body = sseBody(rest.slice(0, 8));
        res.write(body.slice(0, body.length - 20));
        setTimeout(() => res.socket?.destroy(), 20);
      } else if (n === 1) {
        // The server's time limit: a clean end before the run's.
        res.end(`${sseBody(rest.slice(0, 5))}: stream ends, resume with Last-Event-ID\n\n`);
      } else res.end(sseBody(rest));
    });
    const { end, seen, t } = await follow(base, { onConnection: (state) => states.push(state) });
    expect(end).toBe('ended');
    expect(seen.map((s) => s.id)).toEqual(scenario.events.map((e) => e.id));
    expect(lastIds).toEqual([undefined, 'e7', 'e12']);
    expect(states).toEqual(['open', 'reconnecting', 'open', 'reconnecting', 'open']);
    expect(t.sections[0]?.items.filter((i) => i.kind === 'text').map((i) => (i.kind === 'text' ? i.text : ''))).toEqual([
      'Let me thi',
      'I will write the notes.',
      'I wrote **notes.md**.',
    ]);
  });

  it('says the stream is unavailable when the deployment has no such route, so the page reads the REST routes', async () => {
    const local = await serve((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'NotFound', message: 'No route GET /runs/run-stream-1/events.' } }));
    });
    expect((await follow(local)).end).toBe('unavailable');
    const gateway = await serve((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'Not Found' }));
    });
    expect((await follow(gateway)).end).toBe('unavailable');
    const html = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html>');
    });
    expect((await follow(html)).end).toBe('unavailable');
  });

  it('gives up at once on an answer that asking again will not change: a run the caller may not see', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'RunNotFound', message: 'No run run-stream-1.' } }));
    });
    await expect(follow(base)).rejects.toEqual(new ApiError(404, 'RunNotFound', 'No run run-stream-1.'));
  });

  it('tries again after server faults, backing off, and goes on where it was', async () => {
    const base = await serve((req, res, n) => {
      if (n < 2) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: 'Service Unavailable' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(sseBody(after(req)));
    });
    const { end, seen } = await follow(base);
    expect(end).toBe('ended');
    expect(seen).toHaveLength(scenario.events.length);
  });
});
