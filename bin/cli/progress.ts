/**
 * The progress of a batch on stderr: a bar redrawn in place on a terminal, a plain line per item
 * otherwise (a log, a CI job), so the output of a pipe or a file stays readable.
 */
import type { CaseResult } from '../../functions/core/evals/types.js';

/** Where progress goes: stderr as Node gives it (a TTY or not). */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

/** One case's line: `[3/50] add-numbers PASS 1.2s`. */
export function caseLine(done: number, total: number, result: CaseResult): string {
  return `[${done}/${total}] ${result.id} ${result.status.toUpperCase()} ${(result.durationMs / 1000).toFixed(1)}s${result.status === 'error' && result.error ? ` (${result.error})` : ''}`;
}

/** The bar: `[██████░░░░░░] 12/50 ✓10 ✗1 !1`. */
export function bar(done: number, total: number, counts: { pass: number; fail: number; error: number }, width = 24): string {
  const filled = total ? Math.round((done / total) * width) : width;
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}] ${done}/${total} ✓${counts.pass} ✗${counts.fail} !${counts.error}`;
}

/** Progress of `total` cases: `done` after each, `end` once all are. */
export class Progress {
  private done = 0;
  private readonly counts = { pass: 0, fail: 0, error: 0 };

  constructor(
    private readonly total: number,
    private readonly out: ProgressStream,
  ) {
    if (out.isTTY) out.write(bar(0, total, this.counts));
  }

  caseDone(result: CaseResult): void {
    this.done += 1;
    this.counts[result.status] += 1;
    if (!this.out.isTTY) {
      this.out.write(`${caseLine(this.done, this.total, result)}\n`);
      return;
    }
    // A case that did not pass is named above the bar, so it stays on screen.
    const line = result.status === 'pass' ? '' : `${caseLine(this.done, this.total, result)}\n`;
    this.out.write(`\r\x1b[2K${line}${bar(this.done, this.total, this.counts)}`);
  }

  end(): void {
    if (this.out.isTTY) this.out.write('\r\x1b[2K');
  }
}
