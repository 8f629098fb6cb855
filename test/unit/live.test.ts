/** Live text: the writer's pacing, its bounds and its failures, and how the inference step uses it. */
import * as fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ScriptedModel } from '../../functions/adapters/model/scripted.js';
import { type LiveAttempt, type LiveChunk, type LiveText, LiveAttempt as LiveAttemptSchema } from '../../functions/core/live/types.js';
import { LiveTextWriter, liveSortKey, newAttemptId } from '../../functions/core/live/writer.js';
import { defaultContextPolicy } from '../../functions/core/compaction/types.js';
import { summaryInstruction } from '../../functions/core/compaction/context.js';
import { zeroUsage } from '../../functions/core/model/messages.js';
import { type ModelRequest, ModelUnavailable, type PartialContent } from '../../functions/core/model/types.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { memoryCore, say, use } from '../support/agents.js';

const key = { runId: 'run-1', agent: 'single' as const, seq: 1, attempt: '0001700000000-abc123' };

/** A store that records each write (a copy, with the time it started) and answers as told. */
class RecordingLiveText implements LiveText {
  readonly writes: { at: number; attempt: LiveAttempt }[] = [];
  inFlight = 0;
  mostInFlight = 0;
  /** How each write ends: after `ms`, failing when `fail`. */
  answer: (n: number) => { ms: number; fail?: boolean } = () => ({ ms: 0 });
  readonly signals: AbortSignal[] = [];

  async write(attempt: LiveAttempt, options: { signal?: AbortSignal } = {}): Promise<void> {
    const n = this.writes.length;
    this.writes.push({ at: Date.now(), attempt: structuredClone(attempt) });
    if (options.signal) this.signals.push(options.signal);
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    const { ms, fail } = this.answer(n);
    try {
      if (ms) await new Promise((resolve) => setTimeout(resolve, ms));
      if (fail) throw Object.assign(new Error('throttled'), { name: 'StoreUnavailable' });
    } finally {
      this.inFlight--;
    }
  }
}

const text = (block: number, t: string): PartialContent[number] => ({ block, type: 'text', text: t });

/** Each block's text as the chunks of a write spell it. */
function spelled(chunks: LiveChunk[]): Record<number, string> {
  const out: Record<number, string> = {};
  for (const chunk of chunks) out[chunk.block] = (out[chunk.block] ?? '') + chunk.delta;
  return out;
}

describe('LiveTextWriter', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes nothing during the first interval, then everything so far in one write', async () => {
    const store = new RecordingLiveText();
    const writer = new LiveTextWriter(key, store, { intervalMs: 300 });
    const started = Date.now();
    writer.progress([text(0, 'Hel')]);
    await vi.advanceTimersByTimeAsync(150);
    writer.progress([text(0, 'Hello')]);
    await vi.advanceTimersByTimeAsync(149);
    expect(store.writes).toEqual([]);

    await vi.advanceTimersByTimeAsync(1);
    expect(store.writes).toEqual([
      { at: started + 300, attempt: { ...key, chunks: [{ block: 0, kind: 'text', delta: 'Hello' }], updatedAt: new Date(started + 300).toISOString() } },
    ]);
    expect(LiveAttemptSchema.parse(store.writes[0]?.attempt)).toEqual(store.writes[0]?.attempt);
  });

  it('writes nothing for an answer that comes within the first interval', async () => {
    const store = new RecordingLiveText();
    const writer = new LiveTextWriter(key, store, { intervalMs: 300 });
    writer.progress([text(0, 'Quick.')]);
    await vi.advanceTimersByTimeAsync(299);
    await writer.settle();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(store.writes).toEqual([]);
  });

  it('writes at most once an interval, each write appending one chunk per block that grew', async () => {
    const store = new RecordingLiveText();
    const writer = new LiveTextWriter(key, store, { intervalMs: 300 });
    const call = { block: 1, type: 'tool_use' as const, id: 'toolu_1', name: 'write_file' };
    const steps: [number, PartialContent][] = [
      [100, [text(0, 'I will')]],
      [250, [text(0, 'I will write it.')]],
      [400, [text(0, 'I will write it.'), { ...call, partialJson: '{"path":' }]],
      [500, [text(0, 'I will write it.'), { ...call, partialJson: '{"path":"a.md"' }]],
      [700, [text(0, 'I will write it.'), { ...call, partialJson: '{"path":"a.md","content":"x"}' }]],
    ];
    const started = Date.now();
    for (const [at, partial] of steps) {
      await vi.advanceTimersByTimeAsync(started + at - Date.now());
      writer.progress(partial);
    }
    await vi.advanceTimersByTimeAsync(1_000);

    expect(store.writes.map((w) => [w.at - started, w.attempt.chunks])).toEqual([
      [300, [{ block: 0, kind: 'text', delta: 'I will write it.' }]],
      [600, [
        { block: 0, kind: 'text', delta: 'I will write it.' },
        { block: 1, kind: 'tool_use', id: 'toolu_1', name: 'write_file', delta: '{"path":"a.md"' },
      ]],
      [900, [
        { block: 0, kind: 'text', delta: 'I will write it.' },
        { block: 1, kind: 'tool_use', id: 'toolu_1', name: 'write_file', delta: '{"path":"a.md"' },
        { block: 1, kind: 'tool_use', id: 'toolu_1', name: 'write_file', delta: ',"content":"x"}' },
      ]],
    ]);
  });

  it('never overlaps writes: a slow write delays the next one, which then carries all that came meanwhile', async () => {
    const store = new RecordingLiveText();
    store.answer = () => ({ ms: 1_000 });
    const writer = new LiveTextWriter(key, store, { intervalMs: 300 });
    const started = Date.now();
    for (let i = 1; i <= 30; i++) {
      writer.progress([text(0, 'x'.repeat(i))]);
      await vi.advanceTimersByTimeAsync(100);
    }
    await vi.advanceTimersByTimeAsync(3_000);
    expect(store.mostInFlight).toBe(1);
    expect(store.writes.map((w) => w.at - started)).toEqual([300, 1300, 2300, 3300]);
    expect(spelled(store.writes.at(-1)?.attempt.chunks ?? [])).toEqual({ 0: 'x'.repeat(30) });
  });

  it('starts no write once settled, and settling waits for the write under way', async () => {
    const store = new RecordingLiveText();
    store.answer = () => ({ ms: 500 });
    const writer = new LiveTextWriter(key, store, { intervalMs: 300 });
    writer.progress([text(0, 'one')]);
    await vi.advanceTimersByTimeAsync(400);
    expect(store.inFlight).toBe(1);

    let settled = false;
    const settling = writer.settle().then(() => {
      settled = true;
    });
    writer.progress([text(0, 'one two')]);
    await vi.advanceTimersByTimeAsync(399);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await settling;
    expect(store.inFlight).toBe(0);

    writer.progress([text(0, 'one two three')]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(store.writes).toHaveLength(1);
    expect(store.signals[0]?.aborted).toBe(false);
  });

  it('abandons a write that outlasts the settle timeout, aborting it', async () => {
    const store = new RecordingLiveText();
    store.answer = () => ({ ms: 60_000 });
    const writer = new LiveTextWriter(key, store, { intervalMs: 300, settleTimeoutMs: 2_000 });
    writer.progress([text(0, 'stuck')]);
    await vi.advanceTimersByTimeAsync(300);
    const settling = writer.settle();
    await vi.advanceTimersByTimeAsync(2_000);
    await settling;
    expect(store.signals[0]?.aborted).toBe(true);
  });

  it('logs a failed write and carries on: the next write holds every chunk; after maxFailures in a row it stops', async () => {
    const store = new RecordingLiveText();
    store.answer = (n) => ({ ms: 0, fail: n !== 1 });
    const log = vi.fn();
    const writer = new LiveTextWriter(key, store, { intervalMs: 300, maxFailures: 3, log });
    for (let i = 1; i <= 40; i++) {
      writer.progress([text(0, `${'a'.repeat(i)}`)]);
      await vi.advanceTimersByTimeAsync(100);
    }
    await writer.settle();

    // Failed, written (with the first write's chunk too), then three failures in a row: no more.
    expect(store.writes.map((w) => w.attempt.chunks.length)).toEqual([1, 2, 3, 4, 5]);
    expect(spelled(store.writes[1]?.attempt.chunks ?? [])).toEqual({ 0: 'a'.repeat(6) });
    expect(log.mock.calls.map(([message]) => message as string)).toEqual([
      'Live text not written',
      'Live text not written',
      'Live text not written',
      'Live text not written; no more for this attempt',
    ]);
    expect(log.mock.calls[0]?.[1]).toMatchObject({ ...key, failures: 1, error: 'StoreUnavailable: throttled' });
  });

  it('does not fail when the store throws at once', async () => {
    const log = vi.fn();
    const writer = new LiveTextWriter(key, { write: () => { throw new Error('synchronous'); } }, { log });
    writer.progress([text(0, 'x')]);
    await vi.advanceTimersByTimeAsync(300);
    await writer.settle();
    expect(log).toHaveBeenCalledTimes(1);
  });

  it('stops growing at the byte cap, cutting the last delta on whole characters', async () => {
    const store = new RecordingLiveText();
    const maxChunkBytes = 120;
    const writer = new LiveTextWriter(key, store, { intervalMs: 300, maxChunkBytes });
    let body = '';
    for (let i = 0; i < 20; i++) {
      body += 'ab😀é';
      writer.progress([text(0, body)]);
      await vi.advanceTimersByTimeAsync(300);
    }
    await vi.advanceTimersByTimeAsync(3_000);
    const chunks = store.writes.at(-1)?.attempt.chunks ?? [];
    const bytes = chunks.reduce((n, c) => n + new TextEncoder().encode(JSON.stringify(c)).length, 0);
    expect(bytes).toBeLessThanOrEqual(maxChunkBytes);
    const written = spelled(chunks)[0] ?? '';
    expect(body.startsWith(written)).toBe(true);
    expect(written.length).toBeGreaterThan(0);
    // Whole code points: no lone surrogate at the cut.
    expect(written).toBe(new TextDecoder().decode(new TextEncoder().encode(written)));
    // Once full, nothing more is written, whatever comes.
    const writes = store.writes.length;
    writer.progress([text(0, `${body}more`)]);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(store.writes).toHaveLength(writes);
  });

  it('keeps its promises for any answer at any pace (property)', async () => {
    const growth = fc.array(
      fc.record({ gap: fc.integer({ min: 0, max: 700 }), block: fc.integer({ min: 0, max: 2 }), more: fc.string({ minLength: 1, maxLength: 30, unit: 'grapheme' }) }),
      { maxLength: 25 },
    );
    await fc.assert(
      fc.asyncProperty(growth, fc.integer({ min: 0, max: 400 }), fc.integer({ min: 40, max: 400 }), async (steps, writeMs, maxChunkBytes) => {
        const store = new RecordingLiveText();
        store.answer = () => ({ ms: writeMs });
        const writer = new LiveTextWriter(key, store, { intervalMs: 300, maxChunkBytes, settleTimeoutMs: 10_000 });
        const started = Date.now();
        const texts: string[] = ['', '', ''];
        for (const { gap, block, more } of steps) {
          await vi.advanceTimersByTimeAsync(gap);
          // Blocks grow one after another, as a model writes them.
          const current = Math.max(block, texts.findLastIndex((t) => t !== ''));
          texts[current] += more;
          writer.progress(texts.flatMap((t, i) => (t ? [text(i, t)] : [])));
        }
        const settledAt = Date.now();
        const settling = writer.settle();
        await vi.advanceTimersByTimeAsync(writeMs);
        await settling;
        await vi.advanceTimersByTimeAsync(5_000);

        const times = store.writes.map((w) => w.at);
        expect(times.every((t) => t <= settledAt)).toBe(true);
        expect(times.every((t) => t >= started + 300)).toBe(true);
        expect(times.every((t, i) => i === 0 || t - (times[i - 1] ?? 0) >= 300)).toBe(true);
        expect(store.mostInFlight).toBeLessThanOrEqual(1);
        for (const [i, { attempt }] of store.writes.entries()) {
          const before = store.writes[i - 1]?.attempt.chunks ?? [];
          expect(attempt.chunks.slice(0, before.length)).toEqual(before);
          for (const [block, written] of Object.entries(spelled(attempt.chunks))) expect(texts[Number(block)]?.startsWith(written)).toBe(true);
          const bytes = attempt.chunks.reduce((n, c) => n + new TextEncoder().encode(JSON.stringify(c)).length, 0);
          expect(bytes).toBeLessThanOrEqual(maxChunkBytes);
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('live attempt ids and keys', () => {
  it('makes ids that sort by start time, and keys per agent, seq and attempt', () => {
    const early = newAttemptId(1_700_000_000_000);
    const late = newAttemptId(1_700_000_000_001);
    expect(early).toMatch(/^1700000000000-[0-9a-z]{6}$/);
    expect(early < late).toBe(true);
    expect(liveSortKey({ agent: 'coder', seq: 12, attempt: early })).toBe(`coder#0000000012#${early}`);
  });
});

describe('the inference step with live text', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Runs a step to its end, moving the fake clock. */
  async function step(core: Awaited<ReturnType<typeof memoryCore>>, iteration = 0) {
    const result = inferenceStep({ runId: 'run-1', agent: 'single', iteration }, core.deps);
    await vi.runAllTimersAsync();
    return result;
  }

  it('writes the answer so far for the message it will be, and nothing once the message is stored', async () => {
    const core = await memoryCore();
    const live = new RecordingLiveText();
    const log: string[] = [];
    const append = core.conversations.append.bind(core.conversations);
    core.conversations.append = async (id, message) => {
      log.push(`append ${message.role}`);
      return append(id, message);
    };
    const write = live.write.bind(live);
    live.write = async (attempt, options) => {
      log.push('live');
      return write(attempt, options);
    };
    core.deps.liveText = live;
    const answer = 'The sum of 2 and 3 is 5, as the calculator would say.';
    core.model.addTurn({ content: [{ type: 'thinking', thinking: 'easy', signature: 's' }, { type: 'text', text: answer }], pacing: { chunkChars: 4, delayMs: 100 } });

    await step(core);

    const stored = (await core.conversations.load('run/run-1/single')).messages;
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(live.writes.length).toBeGreaterThan(2);
    // Every write before the message is stored; each for seq 1, one attempt, block 1 (thinking is not shown).
    expect(log.lastIndexOf('live')).toBeLessThan(log.indexOf('append assistant'));
    expect(new Set(live.writes.map((w) => liveSortKey(w.attempt))).size).toBe(1);
    expect(live.writes.every((w) => w.attempt.runId === 'run-1' && w.attempt.agent === 'single' && w.attempt.seq === 1)).toBe(true);
    const spelledLast = spelled(live.writes.at(-1)?.attempt.chunks ?? []);
    expect(Object.keys(spelledLast)).toEqual(['1']);
    expect(answer.startsWith(spelledLast[1] ?? '')).toBe(true);
  });

  it('makes a new attempt when a step is retried after its model call broke off, and stores the message once', async () => {
    const core = await memoryCore();
    const live = new RecordingLiveText();
    core.deps.liveText = live;
    let calls = 0;
    core.deps.model = {
      async generate(request) {
        calls++;
        request.onProgress?.([text(0, 'Half an ans')]);
        await new Promise((resolve) => setTimeout(resolve, 500));
        if (calls === 1) throw new ModelUnavailable('The stream broke off.');
        request.onProgress?.([text(0, 'Half an answer, then whole.')]);
        return { message: { role: 'assistant', content: [{ type: 'text', text: 'Half an answer, then whole.' }] }, stopReason: 'end_turn', usage: zeroUsage, model: 'm' };
      },
    };
    const first = inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    const failed = expect(first).rejects.toMatchObject({ name: 'ModelUnavailable' });
    await vi.runAllTimersAsync();
    await failed;
    expect(await step(core)).toMatchObject({ stopReason: 'end_turn', seq: 1 });

    const attempts = [...new Set(live.writes.map((w) => liveSortKey(w.attempt)))];
    expect(attempts).toHaveLength(2);
    expect(attempts.every((sk) => sk.startsWith('single#0000000001#'))).toBe(true);
    expect((await core.conversations.load('run/run-1/single')).messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('makes an attempt per model call of a compacting step, and none for the summary call', async () => {
    const core = await memoryCore('Add.');
    core.deps.context = { ...defaultContextPolicy, windowTokens: 1_000, keepShare: 0.3 };
    core.deps.settings = { model: 'claude-test', maxTokens: 100 };
    const live = new RecordingLiveText();
    core.deps.liveText = live;
    const asked: [summary: boolean, progress: boolean][] = [];
    const seen = (request: ModelRequest) => asked.push([JSON.stringify(request.messages.at(-1)?.content).includes(summaryInstruction), request.onProgress !== undefined]);
    const usage = { inputTokens: 100, outputTokens: 20, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    core.model.addTurn(
      (request) => (seen(request), { ...use(['toolu_1', 'calculator', { operation: 'add', a: 1, b: 1 }]), usage }),
      (request) => (seen(request), { ...say('A long answer that the window cuts off'), stopReason: 'model_context_window_exceeded', pacing: { chunkChars: 5, delayMs: 200 } }),
      (request) => (seen(request), { ...say('the summary'), pacing: { chunkChars: 5, delayMs: 200 } }),
      (request) => (seen(request), { ...say('The sum is 2.'), pacing: { chunkChars: 5, delayMs: 200 } }),
    );
    await step(core);
    await toolStep({ runId: 'run-1', agent: 'single', seq: 1, toolUseId: 'toolu_1' }, core.deps);
    await step(core, 1);

    expect(asked).toEqual([
      [false, true],
      [false, true],
      [true, false],
      [false, true],
    ]);
    // The cut answer's attempt and the answer after compacting, both for message 3.
    const attempts = new Set(live.writes.filter((w) => w.attempt.seq === 3).map((w) => w.attempt.attempt));
    expect(attempts.size).toBe(2);
    expect(live.writes.every((w) => !JSON.stringify(w.attempt.chunks).includes('the summary'))).toBe(true);
  });

  it('stores the message when every live write fails', async () => {
    const core = await memoryCore();
    core.deps.liveText = { write: () => Promise.reject(new Error('AccessDenied')) };
    const log = vi.fn();
    core.deps.livePolicy = { log };
    core.model.addTurn({ ...say('Stored anyway, whatever live text does.'), pacing: { chunkChars: 3, delayMs: 200 } });
    expect(await step(core)).toMatchObject({ stopReason: 'end_turn', seq: 1 });
    expect((await core.conversations.load('run/run-1/single')).messages.at(-1)?.content).toEqual([{ type: 'text', text: 'Stored anyway, whatever live text does.' }]);
    expect(log).toHaveBeenCalled();
  });

  it('asks the model without a progress callback when there is no live text', async () => {
    const core = await memoryCore();
    const asked: boolean[] = [];
    core.model.addTurn((request) => {
      asked.push(request.onProgress !== undefined);
      return say('ok');
    });
    await step(core);
    expect(asked).toEqual([false]);
  });
});

describe('the scripted model', () => {
  it('tells onProgress of its text and tool input as it generates them, keeping block places', async () => {
    const model = new ScriptedModel([
      {
        content: [
          { type: 'thinking', thinking: 'hmm', signature: 's' },
          { type: 'text', text: 'Writing 😀.' },
          { type: 'tool_use', id: 'toolu_1', name: 'write_file', input: { path: 'a' } },
        ],
        pacing: { chunkChars: 4 },
      },
    ]);
    const seen: PartialContent[] = [];
    const response = await model.generate({ model: 'm', system: '', tools: [], messages: [], maxTokens: 10, onProgress: (p) => seen.push(p) });
    const call = { block: 2, type: 'tool_use', id: 'toolu_1', name: 'write_file' };
    expect(seen).toEqual([
      [{ block: 1, type: 'text', text: 'Writ' }],
      [{ block: 1, type: 'text', text: 'Writing ' }],
      [{ block: 1, type: 'text', text: 'Writing 😀.' }],
      [{ block: 1, type: 'text', text: 'Writing 😀.' }, { ...call, partialJson: '{"pa' }],
      [{ block: 1, type: 'text', text: 'Writing 😀.' }, { ...call, partialJson: '{"path":' }],
      [{ block: 1, type: 'text', text: 'Writing 😀.' }, { ...call, partialJson: '{"path":"a"}' }],
    ]);
    expect(response.message.content).toHaveLength(3);
    expect(model.requests[0]).not.toHaveProperty('onProgress');
  });

  it('takes as long as its pacing says, streamed or not', async () => {
    vi.useFakeTimers();
    try {
      const model = new ScriptedModel([{ ...say('abcdef'), pacing: { chunkChars: 2, delayMs: 100 } }]);
      let done = false;
      const answer = model.generate({ model: 'm', system: '', tools: [], messages: [], maxTokens: 10 }).then(() => {
        done = true;
      });
      await vi.advanceTimersByTimeAsync(299);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await answer;
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
