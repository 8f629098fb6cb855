/**
 * Following a run: read, derive and send until the run ends, the watcher leaves or the stream's
 * time is up, polling fast while something happens and slowly while nothing does.
 */
import { StepwiseError } from '../errors/errors.js';
import type { RunEventReader } from './reader.js';
import type { FollowOptions, FollowSettings, PositionedEvent, StreamOutput, TickResult } from './types.js';

/**
 * 250 ms while things change, growing by half each quiet read to 4 s: an idle run costs at most
 * 15 reads a minute of each of the three parts (45 DynamoDB requests), and a run waiting for a
 * reviewer 15. A stream lasts at most 14 minutes: a Lambda response stream may last 15.
 */
export const defaultFollowSettings: FollowSettings = { fastPollMs: 250, idlePollMs: 4_000, heartbeatMs: 15_000, maxDurationMs: 14 * 60_000 };

/** How many reads in a row may fail with a transient error before the stream gives up (and the client resumes). */
const transientFailures = 5;

/**
 * Follows a run until its last event, the longest duration or the signal: the events of `first`
 * (the reader's first tick, already taken), then each tick's, polling only as often as there can
 * be news. A transient read error is retried at the next tick; anything else ends the stream by
 * throwing.
 */
export async function* followRun(reader: RunEventReader, first: TickResult, options: FollowOptions): AsyncGenerator<StreamOutput> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? abortableSleep;
  const deadline = now() + options.maxDurationMs;
  let result = first;
  let interval = options.fastPollMs;
  let quietSince = now();
  let failures = 0;
  for (;;) {
    for (const { cursor, event } of result.events) yield { kind: 'event', cursor, event };
    if (result.done || options.signal.aborted) return;
    if (result.events.length > 0) quietSince = now();
    interval = result.changed ? options.fastPollMs : Math.min(options.idlePollMs, Math.max(options.fastPollMs, interval * 1.5));
    // Sleep until the next read, sending heartbeats on the way; the deadline ends the stream.
    let left = result.again ? 0 : interval;
    for (;;) {
      const at = now();
      if (at >= deadline) {
        yield { kind: 'limit', cursor: reader.cursor };
        return;
      }
      const heartbeatDue = quietSince + options.heartbeatMs;
      if (at >= heartbeatDue) {
        yield { kind: 'heartbeat' };
        quietSince = at;
        continue;
      }
      const wake = Math.min(left, deadline - at, heartbeatDue - at);
      if (wake > 0) await sleep(wake, options.signal);
      if (options.signal.aborted) return;
      left -= wake;
      if (left <= 0) break;
    }
    try {
      result = await reader.tick();
      failures = 0;
    } catch (error) {
      if (!(error instanceof StepwiseError && error.transient) || ++failures >= transientFailures) throw error;
      result = { events: [], done: false, changed: false, again: false };
    }
  }
}

/**
 * What the stores show of the run now, without waiting for more: the reader's events round after
 * round while a round brings any (another agent's conversation, a record read again), at most
 * `maxRounds` reads. The same events, with the same cursors, as a stream from the same cursor.
 */
export async function readNow(reader: RunEventReader, maxRounds = 8): Promise<{ events: PositionedEvent[]; done: boolean }> {
  const events: PositionedEvent[] = [];
  for (let round = 0; round < maxRounds; round++) {
    const result = await reader.tick();
    events.push(...result.events);
    if (result.done || (result.events.length === 0 && !result.again)) return { events, done: result.done };
  }
  return { events, done: false };
}

/** Resolves after `ms`, or at once when the signal aborts. */
function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
