/**
 * What the memory tool's commands do to text, as Anthropic's reference implementation answers
 * them (`@anthropic-ai/sdk`, `tools/memory/node`): pure functions, so the store only reads and writes.
 */
import { ToolFailure } from '../tools/types.js';
import { memoryPath } from './paths.js';
import type { MemoryEntry } from './types.js';

/** Line numbers are right-aligned in six columns, then a tab. */
const lineNumberWidth = 6;

function numberLine(line: string, number: number): string {
  return `${String(number).padStart(lineNumberWidth, ' ')}\t${line}`;
}

/** A file's text with line numbers, all of it or `viewRange` (`[start, end]`, 1-based, `end` -1 for the last line). */
export function viewFile(text: string, path: string, viewRange?: readonly number[]): string {
  const lines = text.split('\n');
  let shown = lines;
  let first = 1;
  if (viewRange && viewRange.length === 2) {
    const [from = 1, to = -1] = viewRange;
    const start = Math.max(1, from) - 1;
    shown = lines.slice(start, to === -1 ? lines.length : to);
    first = start + 1;
  }
  return `Here's the content of ${path} with line numbers:\n${shown.map((line, i) => numberLine(line, first + i)).join('\n')}`;
}

/** A size as the reference implementation writes it: `0B`, `512B`, `1.5K`, `2M`. */
export function formatSize(bytes: number): string {
  if (bytes === 0) return '0B';
  const units = ['B', 'K', 'M', 'G'];
  const i = Math.min(units.length - 1, Math.floor(Math.log(bytes) / Math.log(1024)));
  const size = bytes / 1024 ** i;
  return (size % 1 === 0 ? size.toString() : size.toFixed(1)) + units[i];
}

/**
 * A folder and what is in it up to 2 levels deep (folders end with `/`; a folder's size is that of
 * its files), from the scope's files; `folder` is relative to `/memories` (`""` for the root).
 */
export function viewDirectory(folder: string, entries: readonly MemoryEntry[]): string {
  const base = folder === '' ? '' : `${folder}/`;
  const items = new Map<string, number>();
  let total = 0;
  for (const entry of entries) {
    if (!entry.path.startsWith(base)) continue;
    total += entry.size;
    const parts = entry.path.slice(base.length).split('/');
    if (parts.some((part) => part.startsWith('.'))) continue;
    for (let depth = 1; depth <= Math.min(2, parts.length); depth++) {
      const isFile = depth === parts.length;
      const item = parts.slice(0, depth).join('/') + (isFile ? '' : '/');
      items.set(item, (items.get(item) ?? 0) + entry.size);
    }
  }
  const shown = memoryPath(folder);
  const lines = [`${formatSize(total)}\t${shown}`, ...[...items.keys()].sort().map((item) => `${formatSize(items.get(item) ?? 0)}\t${shown}/${item}`)];
  return `Here're the files and directories up to 2 levels deep in ${shown}, excluding hidden items and node_modules:\n${lines.join('\n')}`;
}

/** Replaces the one occurrence of `oldStr`; a missing or repeated one is a tool error naming the lines. */
export function replaceOnce(text: string, oldStr: string, newStr: string, path: string): { text: string; answer: string } {
  const lines = text.split('\n');
  const matching = lines.flatMap((line, i) => (line.includes(oldStr) ? [i + 1] : []));
  // A multi-line old_str is on no single line: count its occurrences in the whole text.
  const occurrences = oldStr.includes('\n') ? countOccurrences(text, oldStr) : matching.length;
  if (oldStr === '' || occurrences === 0) {
    throw new ToolFailure(`No replacement was performed, old_str \`${oldStr}\` did not appear verbatim in ${path}.`);
  }
  if (occurrences > 1) {
    const where = matching.length ? ` in lines: ${matching.join(', ')}` : '';
    throw new ToolFailure(`No replacement was performed. Multiple occurrences of old_str \`${oldStr}\`${where}. Please ensure it is unique`);
  }
  const at = text.indexOf(oldStr);
  const next = text.slice(0, at) + newStr + text.slice(at + oldStr.length);
  const changed = text.slice(0, at).split('\n').length - 1;
  const nextLines = next.split('\n');
  const start = Math.max(0, changed - 2);
  const end = Math.min(nextLines.length, changed + 3 + newStr.split('\n').length - 1);
  const snippet = nextLines.slice(start, end).map((line, i) => numberLine(line, start + i + 1));
  return { text: next, answer: `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n${snippet.join('\n')}` };
}

/** Inserts `insertText` after line `line` (0 inserts at the top); a line outside the file is a tool error. */
export function insertAt(text: string, line: number, insertText: string): string {
  const lines = text.split('\n');
  if (!Number.isInteger(line) || line < 0 || line > lines.length) {
    throw new ToolFailure(`Invalid \`insert_line\` parameter: ${line}. It should be within the range of lines of the file: [0, ${lines.length}]`);
  }
  lines.splice(line, 0, insertText.replace(/\n$/, ''));
  return lines.join('\n');
}

/** A view cut to `maxChars`, with a marker saying how to see the rest. */
export function capView(answer: string, maxChars: number): string {
  if (answer.length <= maxChars) return answer;
  return `${answer.slice(0, maxChars)}\n[Memory view truncated: showing ${maxChars} of ${answer.length} characters. View a line range (view_range) or a subfolder to see the rest.]`;
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}
