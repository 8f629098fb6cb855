/**
 * Follows a run's live stream (`GET /runs/{runId}/events`, AG-UI over server-sent events;
 * docs/events.md, "The event stream") until the run ends. Read with `fetch`, not
 * `EventSource`, because the request carries the caller's token in `Authorization`, which
 * `EventSource` cannot send; the bytes are parsed by `eventsource-parser`.
 *
 * A stream that drops, or that the server ends before the run does (its time limit), is opened
 * again at once with `Last-Event-ID` set to the last event applied, so nothing is missed and nothing
 * is applied twice; failed attempts back off up to a few seconds and go on while the page is open.
 * A deployment without the route (a 404 that is not `RunNotFound`, or an answer that is not an
 * event stream) is reported as `unavailable`, and the caller reads the REST routes instead.
 */
import { createParser } from 'eventsource-parser';
import { ApiError, type ApiClient } from './api.js';
import type { StreamEvent } from './transcript.js';

export type StreamEnd = 'ended' | 'unavailable' | 'aborted';

export interface FollowStreamOptions {
  api: Pick<ApiClient, 'events'>;
  /** The run whose stream this is. */
  runId: string;
  /** Called with each event and its id, in order, each once. */
  onEvent: (event: StreamEvent, id: string | undefined) => void;
  /** Whether the stream is open or being reopened (for the page's status line). */
  onConnection?: (state: 'open' | 'reconnecting') => void;
  signal: AbortSignal;
  /** Resume after this event id. */
  after?: string;
  /** The first wait before a failed attempt is retried (ms); doubles up to `maxBackoffMs`. @default 250 */
  backoffMs?: number;
  /** @default 5000 */
  maxBackoffMs?: number;
}

const endTypes = new Set(['RUN_FINISHED', 'RUN_ERROR']);

/** Follows the stream until the run ends (`ended`), the route is missing (`unavailable`) or `signal` aborts (`aborted`). */
export async function followStream(options: FollowStreamOptions): Promise<StreamEnd> {
  const { api, runId, signal } = options;
  let lastId = options.after;
  let failures = 0;
  let everOpened = false;
  while (!signal.aborted) {
    let received = 0;
    try {
      const res = await api.events(runId, { after: lastId, signal });
      if (!/^text\/event-stream\b/i.test(res.headers.get('content-type') ?? '')) {
        await res.body?.cancel().catch(() => undefined);
        if (!everOpened) return 'unavailable';
        throw new ApiError(res.status, 'NotAStream', 'The stream answered something other than events.');
      }
      everOpened = true;
      options.onConnection?.('open');
      let ended = false;
      const parser = createParser({
        onEvent(message) {
          if (ended) return;
          let event: StreamEvent;
          try {
            event = JSON.parse(message.data) as StreamEvent;
          } catch {
            return; // Not an event of the contract; keep reading.
          }
          if (typeof event !== 'object' || event === null || typeof event.type !== 'string') return;
          received += 1;
          failures = 0;
          if (message.id !== undefined) lastId = message.id;
          options.onEvent(event, message.id);
          if (endTypes.has(event.type)) ended = true;
        },
      });
      const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
      if (!reader) throw new ApiError(0, 'Unreachable', 'The stream had no body.');
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done || ended) break;
          parser.feed(value);
        }
      } finally {
        if (ended) await reader.cancel().catch(() => undefined);
        reader.releaseLock();
      }
      if (ended) return 'ended';
      // The server ended the stream before the run (its time limit): continue from the last event.
    } catch (error) {
      if (signal.aborted) return 'aborted';
      if (error instanceof ApiError && isMissingRoute(error) && !everOpened) return 'unavailable';
      // An answer that will not change by asking again (401, 403, RunNotFound) is the caller's to show.
      if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429) throw error;
    }
    if (signal.aborted) break;
    options.onConnection?.('reconnecting');
    if (received === 0) {
      failures += 1;
      const wait = Math.min(options.maxBackoffMs ?? 5_000, (options.backoffMs ?? 250) * 2 ** (failures - 1));
      await sleep(wait, signal);
    }
  }
  return 'aborted';
}

/** A 404 (or 405) that is not about the run: the deployment has no stream route. */
function isMissingRoute(error: ApiError): boolean {
  return (error.status === 404 && error.code !== 'RunNotFound') || error.status === 405 || error.status === 501;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
