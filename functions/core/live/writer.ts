/**
 * Live text: what the model has generated so far, written while it generates so that a watcher
 * sees the answer before the step ends (docs/events.md, "Live text"). It is best effort:
 * the stored assistant message is the truth. A live attempt item only grows (chunks are appended,
 * never changed), no item is written for a model that answers within the first interval, and
 * none after the step starts storing its message.
 */
import { seqKey } from '../conversation/conversation.js';
import type { PartialContent } from '../model/types.js';
import type { LiveAttempt, LiveChunk, LiveKey, LivePolicy, LiveText } from './types.js';

/** The sort key of an attempt in its run's partition: `<agent>#<seqKey(seq)>#<attempt>`. */
export function liveSortKey(attempt: Pick<LiveAttempt, 'agent' | 'seq' | 'attempt'>): string {
  return `${attempt.agent}#${seqKey(attempt.seq)}#${attempt.attempt}`;
}

/** A new attempt id, chosen once per model call. */
export function newAttemptId(now = Date.now()): string {
  const random = Array.from(crypto.getRandomValues(new Uint8Array(6)), (byte) => (byte % 36).toString(36)).join('');
  return `${String(now).padStart(13, '0')}-${random}`;
}

export const defaultLivePolicy: LivePolicy = {
  intervalMs: 300,
  maxChunkBytes: 256 * 1024,
  settleTimeoutMs: 2_000,
  maxFailures: 3,
  log: (message, detail) => console.warn(JSON.stringify({ level: 'warn', message, ...detail })),
};

/**
 * Writes one model call's live attempt while the model generates. `progress` takes the answer
 * so far (the model's `onProgress`); a write happens at most every `intervalMs`, the first one
 * `intervalMs` after the writer was made, and appends one chunk per block that grew since the
 * last write. Writes never overlap. A failed write is logged and costs nothing else: the next
 * one carries every chunk again. `settle` ends it: no write starts after it is called, and it
 * resolves once the write under way (if any) has finished or been abandoned.
 */
export class LiveTextWriter {
  private readonly policy: LivePolicy;
  private readonly startedAt = Date.now();
  private readonly chunks: LiveChunk[] = [];
  /** Per block, how many characters (UTF-16 units) of it are in `chunks`. */
  private readonly sent = new Map<number, number>();
  private bytes = 0;
  private latest: PartialContent = [];
  private lastWriteAt: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private writing: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private failures = 0;
  /** No more writes: settled, full, or failing. */
  private done = false;

  constructor(
    private readonly key: LiveKey,
    private readonly store: LiveText,
    policy: Partial<LivePolicy> = {},
  ) {
    this.policy = { ...defaultLivePolicy, ...policy };
  }

  /** The answer so far; a write follows when the interval allows. */
  readonly progress = (partial: PartialContent): void => {
    if (this.done) return;
    this.latest = partial;
    this.schedule();
  };

  /** Stops writing; resolves when no write of this attempt is under way any more. */
  async settle(): Promise<void> {
    this.done = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const writing = this.writing;
    if (!writing) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.policy.settleTimeoutMs);
    });
    const outcome = await Promise.race([writing, late]);
    clearTimeout(timer);
    // A write that outlasts the wait is cancelled rather than left to land after the message.
    if (outcome === 'late') this.abort.abort(new Error('The step stores its message; live text is no longer written.'));
  }

  private schedule(): void {
    if (this.done || this.timer || this.writing || !this.hasNews()) return;
    const wait = (this.lastWriteAt ?? this.startedAt) + this.policy.intervalMs - Date.now();
    if (wait <= 0) {
      this.flush();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, wait);
    this.timer.unref?.();
  }

  private hasNews(): boolean {
    return this.latest.some((block) => contentOf(block).length > (this.sent.get(block.block) ?? 0));
  }

  private flush(): void {
    if (this.done) return;
    const added = this.take(this.latest);
    if (!added.length) return;
    this.chunks.push(...added);
    const attempt: LiveAttempt = { ...this.key, chunks: [...this.chunks], updatedAt: new Date().toISOString() };
    this.lastWriteAt = Date.now();
    // Called through a promise, so that even a write that throws at once is only logged.
    this.writing = Promise.resolve()
      .then(() => this.store.write(attempt, { signal: this.abort.signal }))
      .then(
        () => {
          this.failures = 0;
        },
        (error: unknown) => {
          this.failures++;
          const stop = this.failures >= this.policy.maxFailures;
          if (stop) this.done = true;
          this.policy.log(stop ? 'Live text not written; no more for this attempt' : 'Live text not written', {
            ...this.key,
            failures: this.failures,
            error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
          });
        },
      )
      .finally(() => {
        this.writing = undefined;
        this.schedule();
      });
  }

  /** The chunks that bring the written text up to `partial`, within the byte cap. */
  private take(partial: PartialContent): LiveChunk[] {
    const added: LiveChunk[] = [];
    for (const block of partial) {
      const content = contentOf(block);
      const from = this.sent.get(block.block) ?? 0;
      if (content.length <= from) continue;
      const delta = content.slice(from);
      const chunk: LiveChunk =
        block.type === 'text'
          ? { block: block.block, kind: 'text', delta }
          : { block: block.block, kind: 'tool_use', id: block.id, name: block.name, delta };
      const size = byteLength(JSON.stringify(chunk));
      if (this.bytes + size <= this.policy.maxChunkBytes) {
        added.push(chunk);
        this.bytes += size;
        this.sent.set(block.block, content.length);
        continue;
      }
      // The cap: what fits of this delta goes out, and nothing after it.
      this.done = true;
      const room = this.policy.maxChunkBytes - this.bytes - (size - byteLength(JSON.stringify(delta)));
      const fits = prefixWithin(delta, room);
      if (fits) {
        added.push({ ...chunk, delta: fits });
        this.bytes += byteLength(JSON.stringify({ ...chunk, delta: fits }));
        this.sent.set(block.block, from + fits.length);
      }
      break;
    }
    return added;
  }
}

function contentOf(block: PartialContent[number]): string {
  return block.type === 'text' ? block.text : block.partialJson;
}

const encoder = new TextEncoder();

function byteLength(text: string): number {
  return encoder.encode(text).length;
}

/** The longest prefix of `text`, whole code points only, whose JSON string takes at most `bytes`. */
function prefixWithin(text: string, bytes: number): string {
  let used = 2; // the quotes
  let end = 0;
  for (const char of text) {
    used += byteLength(JSON.stringify(char)) - 2;
    if (used > bytes) break;
    end += char.length;
  }
  return text.slice(0, end);
}
