/**
 * Follows one run for the run page: on its live stream when the deployment has the route, else
 * by reading the same events as pages every second or so while the run runs
 * (`GET /runs/{runId}/events/page`, docs/console.md, "How it is built"). Either way the events,
 * their ids and the `Transcript` folded from them are the same: the server derives them once.
 */
import { type ApiClient, ApiError } from './api.js';
import type { MessageRecord, RunRecord } from './records.js';
import { followStream } from './stream.js';
import { type StreamEvent, type Transcript, applyEvent, emptyTranscript } from './transcript.js';

export type FollowMode = { kind: 'connecting' } | { kind: 'stream'; connection: 'open' | 'reconnecting' } | { kind: 'polling' };

export interface FollowCallbacks {
  onTranscript(t: Transcript): void;
  /** The run record, read beside each page of events (polling). */
  onRecord?(run: RunRecord): void;
  onMode?(mode: FollowMode): void;
  /** An answer that ends following (the run is not there, the caller may not see it). */
  onError(error: ApiError): void;
}

export interface FollowOptions {
  /** How often a page of events is read while the run runs (ms). @default 1000 */
  pollMs?: number;
  /** Batches redraws (the page passes requestAnimationFrame). @default queueMicrotask */
  schedule?: (redraw: () => void) => void;
}

export interface RunFollower {
  /** Reads the next page now (after a decision or a cancel), when polling. */
  refresh(): void;
  stop(): void;
}

export function followRun(api: ApiClient, runId: string, callbacks: FollowCallbacks, options: FollowOptions = {}): RunFollower {
  const controller = new AbortController();
  const { signal } = controller;
  const schedule = options.schedule ?? ((redraw: () => void) => queueMicrotask(redraw));
  let wake: (() => void) | undefined;
  let polling = false;
  // The last event shown, from the stream or a page: what follows it is read next.
  let last: string | undefined;

  let transcript = emptyTranscript();
  let pending = false;
  const redraw = () => {
    if (pending) return;
    pending = true;
    schedule(() => {
      pending = false;
      if (!signal.aborted) callbacks.onTranscript(transcript);
    });
  };

  const fail = (error: unknown) => {
    if (signal.aborted) return;
    callbacks.onError(error instanceof ApiError ? error : new ApiError(0, 'ConsoleError', error instanceof Error ? error.message : String(error)));
  };

  const poll = async () => {
    polling = true;
    callbacks.onMode?.({ kind: 'polling' });
    while (!signal.aborted) {
      let running = true;
      try {
        const [run, page] = await Promise.all([api.getRun(runId), api.eventsPage(runId, last)]);
        if (signal.aborted) return;
        callbacks.onRecord?.(run);
        for (const { id, event } of page.items) {
          transcript = applyEvent(transcript, event as StreamEvent, id);
          last = id;
        }
        redraw();
        running = !page.done;
      } catch (error) {
        // A dropped connection or a server fault may pass; any other answer ends following.
        if (!(error instanceof ApiError) || (error.status !== 0 && error.status < 500)) throw error;
      }
      if (!running) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.pollMs ?? 1_000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
        signal.addEventListener('abort', () => wake?.(), { once: true });
      });
      wake = undefined;
    }
  };

  void (async () => {
    callbacks.onMode?.({ kind: 'connecting' });
    const end = await followStream({
      api,
      runId,
      signal,
      onEvent: (event, id) => {
        transcript = applyEvent(transcript, event, id);
        last = id;
        redraw();
      },
      onConnection: (connection) => callbacks.onMode?.({ kind: 'stream', connection }),
    });
    if (end === 'unavailable') await poll();
  })().catch(fail);

  return {
    refresh: () => {
      if (polling) wake?.();
    },
    stop: () => controller.abort(),
  };
}

/** Every message of the run, page after page. */
export async function readMessages(api: Pick<ApiClient, 'messages'>, runId: string): Promise<MessageRecord[]> {
  const items: MessageRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.messages(runId, cursor ? { cursor } : {});
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}
