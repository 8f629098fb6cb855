/**
 * The event stream in `npm run bench`: what watching an idle run costs in DynamoDB requests (counted
 * at the emulator, the run's own requests measured without a watcher and taken off), and 100
 * watchers of one run on the local server at once, and how long live text takes from the model's
 * byte to a watcher. Printed, not asserted.
 */
import { say, use } from '../support/agents.js';
import { type StackFixture, startFixture } from '../support/local-stack.js';
import { eventsOf, frames } from '../support/sse.js';
import { row } from './table.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface IdleFigures {
  what: string;
  /** DynamoDB requests a minute with one watcher, the run's own taken off. */
  perMinute: number;
  byOperation: Record<string, number>;
}

export interface CrowdFigures {
  watchers: number;
  completed: number;
  errors: string[];
  identical: boolean;
  eventsEach: number;
  seconds: number;
  dynamoRequests: number;
}

export interface LatencyFigures {
  /** Characters timed (each from the moment the model stand-in sent it to its arrival at the watcher). */
  chars: number;
  deltas: number;
  medianMs: number;
  p95Ms: number;
  /** Whether the watcher's deltas added up to the text the model sent. */
  complete: boolean;
}

export interface StreamFigures {
  idle: IdleFigures[];
  crowd: CrowdFigures;
  latency: LatencyFigures;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/**
 * A model that writes 480 characters over about 4.5 s (8 characters every 75 ms) and one watcher:
 * for each character, the time from the stand-in sending it to the watcher receiving it.
 */
async function measureLatency(fixture: StackFixture, sent: { text: string; at: number[] }): Promise<LatencyFigures> {
  const text = Array.from({ length: 60 }, (_, i) => `word${String(i).padStart(3, '0')} `).join('');
  const tag = fixture.book.add('bench-latency', { turn: { ...say(text), pacing: { chunkChars: 8, delayMs: 75 } } });
  sent.text = '';
  sent.at = [];
  const runId = String((await fixture.post('/runs', { goal: `${tag} Talk.`, mode: 'single' })).body.runId);
  const res = await fetch(`${fixture.stack.url}/runs/${runId}/events`);
  let received = '';
  let deltas = 0;
  const latencies: number[] = [];
  for await (const frame of frames(res)) {
    const event = frame.event as { type?: string; delta?: string } | undefined;
    if (event?.type === 'TEXT_MESSAGE_CONTENT' && event.delta) {
      const now = performance.now();
      for (let i = received.length; i < received.length + event.delta.length; i++) {
        const at = sent.at[i];
        if (at !== undefined) latencies.push(now - at);
      }
      received += event.delta;
      deltas++;
    }
    if (event?.type === 'RUN_FINISHED' || event?.type === 'RUN_ERROR') break;
  }
  latencies.sort((a, b) => a - b);
  return { chars: latencies.length, deltas, medianMs: quantile(latencies, 0.5), p95Ms: quantile(latencies, 0.95), complete: received === text && sent.text === text };
}

/** Reads a stream on one connection until it ends or `stop` aborts; the events' ids and types. */
async function watch(url: string, stop?: AbortSignal): Promise<string[]> {
  const res = await fetch(url, stop ? { signal: stop } : {});
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  const got = [];
  try {
    for await (const frame of frames(res)) got.push(frame);
  } catch (error) {
    if (!stop?.aborted) throw error;
  }
  return eventsOf(got).map((e) => `${e.id} ${e.event.type}`);
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`${what} never happened.`);
}

/** Requests a minute at the emulator over `ms`, by operation. */
async function rate(stack: StackFixture['stack'], ms: number): Promise<Record<string, number>> {
  stack.requestCounter.reset();
  await sleep(ms);
  const counts = (await stack.requestCounter.snapshot()).dynamo;
  return Object.fromEntries(Object.entries(counts).map(([op, n]) => [op, (n * 60_000) / ms]));
}

/** One watcher of a run that waits, after the polling has slowed down: its requests a minute. */
async function idleCost(fixture: StackFixture, what: string, runId: string, windowMs: number): Promise<IdleFigures> {
  const own = await rate(fixture.stack, windowMs / 2);
  const stop = new AbortController();
  const watching = watch(`${fixture.stack.url}/runs/${runId}/events`, stop.signal).catch(() => []);
  await sleep(15_000);
  const withWatcher = await rate(fixture.stack, windowMs);
  stop.abort();
  await watching;
  const byOperation = Object.fromEntries(Object.entries(withWatcher).map(([op, n]) => [op, Math.max(0, n - (own[op] ?? 0))]));
  return { what, perMinute: Object.values(byOperation).reduce((a, b) => a + b, 0), byOperation };
}

export async function measureStream(windowMs = 40_000): Promise<StreamFigures> {
  // What the model stand-in sent, character by character, with the time each left.
  const sent = { text: '', at: [] as number[] };
  const fixture = await startFixture(
    {},
    {
      messagesApi: {
        onTextDelta: (text, at) => {
          sent.text += text;
          for (let i = 0; i < text.length; i++) sent.at.push(at);
        },
      },
    },
  );
  try {
    // First, alone on the server: the other runs here send text too.
    const latency = await measureLatency(fixture, sent);
    const idle: IdleFigures[] = [];
    // A run whose call waits for a reviewer.
    const gated = fixture.book.add('bench-gated', { turn: use(['toolu_w', 'write_file', { path: 'a.md', content: 'A' }]) }, { turn: say('Done.') });
    const waiting = String((await fixture.post('/runs', { goal: `${gated} Write.`, mode: 'single', approvals: { tools: ['write_file'] } })).body.runId);
    await waitFor(async () => ((await fixture.get(`/runs/${waiting}`)).body.waitingFor as unknown[]).length > 0, 'The approval wait');
    idle.push(await idleCost(fixture, 'a run waiting for a reviewer', waiting, windowMs));
    await fixture.post(`/runs/${waiting}/approvals/toolu_w`, { decision: 'approve' });

    // A run whose model call takes long (no live text written).
    let release = () => {};
    const answer = new Promise<void>((resolve) => (release = resolve));
    const slow = fixture.book.respondWith('bench-slow', async () => {
      await answer;
      return { turn: say('Finally.') };
    });
    const thinking = String((await fixture.post('/runs', { goal: `${slow} Think.`, mode: 'single' })).body.runId);
    await waitFor(async () => ((await fixture.get(`/runs/${thinking}/messages`)).body.items as unknown[]).length > 0, 'The opening message');
    idle.push(await idleCost(fixture, 'a run waiting for a model answer', thinking, windowMs));
    release();
    await fixture.waitFor(thinking);

    // 100 watchers of one run of a few turns, connected at once.
    const steps = fixture.book.add(
      'bench-crowd',
      { turn: use(['toolu_1', 'calculator', { operation: 'add', a: 1, b: 2 }]), delayMs: 400 },
      { turn: use(['toolu_2', 'calculator', { operation: 'multiply', a: 3, b: 4 }], ['toolu_3', 'calculator', { operation: 'divide', a: 1, b: 0 }]), delayMs: 400 },
      { turn: say('Three results.'), delayMs: 400 },
    );
    const crowdRun = String((await fixture.post('/runs', { goal: `${steps} Compute.`, mode: 'single' })).body.runId);
    fixture.stack.requestCounter.reset();
    const started = performance.now();
    const outcomes = await Promise.allSettled(Array.from({ length: 100 }, () => watch(`${fixture.stack.url}/runs/${crowdRun}/events`)));
    const seconds = (performance.now() - started) / 1000;
    const dynamoRequests = Object.values((await fixture.stack.requestCounter.snapshot()).dynamo).reduce((a, b) => a + b, 0);
    const sequences = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    const errors = outcomes.flatMap((o) => (o.status === 'rejected' ? [String(o.reason)] : []));
    const first = JSON.stringify(sequences[0]);
    return {
      latency,
      idle,
      crowd: {
        watchers: outcomes.length,
        completed: sequences.filter((s) => s.at(-1)?.endsWith('RUN_FINISHED')).length,
        errors,
        identical: sequences.every((s) => JSON.stringify(s) === first),
        eventsEach: sequences[0]?.length ?? 0,
        seconds,
        dynamoRequests,
      },
    };
  } finally {
    await fixture.close();
  }
}

export function streamReport({ idle, crowd, latency }: StreamFigures): string {
  const lines = ['\n## The event stream (GET /runs/{runId}/events)\n'];
  lines.push(row(['live text, model byte → local watcher', 'median ms (target < 400)', 'p95 ms (target < 800)', 'characters', 'deltas', 'added up to the text']));
  lines.push(row(['---', '---', '---', '---', '---', '---']));
  lines.push(row(['480 characters over ~4.5 s', latency.medianMs.toFixed(0), latency.p95Ms.toFixed(0), latency.chars, latency.deltas, latency.complete ? 'yes' : 'no']));
  lines.push('');
  lines.push(row(['one watcher of …', 'DynamoDB requests / minute (target ≤ 60)', 'by operation']));
  lines.push(row(['---', '---', '---']));
  for (const f of idle) {
    lines.push(row([f.what, f.perMinute.toFixed(1), Object.entries(f.byOperation).map(([op, n]) => `${op} ${n.toFixed(1)}`).join(', ')]));
  }
  lines.push('');
  lines.push(row(['watchers at once', 'ended with RUN_FINISHED', 'errors', 'same sequence', 'events each', 'seconds', 'DynamoDB requests']));
  lines.push(row(['---', '---', '---', '---', '---', '---', '---']));
  lines.push(row([crowd.watchers, crowd.completed, crowd.errors.length, crowd.identical ? 'yes' : 'no', crowd.eventsEach, crowd.seconds.toFixed(1), crowd.dynamoRequests]));
  if (crowd.errors.length) lines.push(`\nFirst error: ${crowd.errors[0]}`);
  return lines.join('\n');
}

// `tsx test/bench/stream.ts` runs this part alone.
if (import.meta.url === `file://${process.argv[1]}`) console.log(streamReport(await measureStream()));
