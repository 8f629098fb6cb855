/**
 * The workspace tools. Paths are checked by the workspace (invariant 7, docs/ARCHITECTURE.md); a refused path is a
 * tool error the model can correct.
 */
import * as z from 'zod';
import { FileTooLarge, type VersionedFile, WriteConflict } from '../../workspace/types.js';
import { checkPath } from '../../workspace/paths.js';
import { type ToolContext, ToolFailure } from '../types.js';
import { defineTool } from '../registry.js';

const path = z.string().describe('A path relative to the workspace root, such as "src/index.ts".');
const utf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/**
 * How often `edit_file` reads again and retries when another write came between its read and its
 * write: enough for as many edits of one file as the agent loop runs at once (8 by default).
 */
export const editAttempts = 10;

/** A pause before reading again, with full jitter so racing edits spread out: up to 25 ms · 2^attempt, at most 1 s. */
function backoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(1000, 25 * 2 ** attempt)));
}

/** The file with its version, or a tool error the model can act on (no such file, too large). */
async function readFileVersioned(filePath: string, ctx: ToolContext): Promise<VersionedFile> {
  let file: VersionedFile | undefined;
  try {
    file = await ctx.workspace.readVersioned(filePath, { maxBytes: ctx.limits.maxFileBytes });
  } catch (error) {
    if (error instanceof FileTooLarge) throw new ToolFailure(`"${filePath}" is ${error.size} bytes, over the ${error.limit}-byte limit.`);
    throw error;
  }
  if (file === undefined) {
    throw new ToolFailure(`no file at "${checkPath(filePath)}". Use list_files to see which files exist.`);
  }
  return file;
}

async function readText(filePath: string, ctx: ToolContext): Promise<string> {
  return decodeText(filePath, (await readFileVersioned(filePath, ctx)).bytes);
}

function decodeText(filePath: string, bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ToolFailure(`"${filePath}" is not UTF-8 text, so it cannot be shown.`);
  }
}

function encodeText(content: string, ctx: ToolContext): Uint8Array {
  const bytes = encoder.encode(content);
  if (bytes.byteLength > ctx.limits.maxFileBytes) {
    throw new ToolFailure(
      `the content is ${bytes.byteLength} bytes, over the ${ctx.limits.maxFileBytes}-byte file limit; split it into smaller files.`,
    );
  }
  return bytes;
}

export const readFile = defineTool({
  name: 'read_file',
  description: 'Returns the full text of a file in the workspace.',
  input: z.object({ path }).strict(),
  async run(input, ctx) {
    return readText(input.path, ctx);
  },
});

export const writeFile = defineTool({
  name: 'write_file',
  description:
    'Creates a file in the workspace, or replaces it whole if it exists. Folders are created as needed. ' +
    'To change part of an existing file, prefer edit_file.',
  input: z.object({ path, content: z.string().describe('The complete new content of the file.') }).strict(),
  async run(input, ctx) {
    const bytes = encodeText(input.content, ctx);
    await ctx.workspace.write(input.path, bytes);
    return `Wrote ${bytes.byteLength} bytes to ${checkPath(input.path)}.`;
  },
});

export const listFiles = defineTool({
  name: 'list_files',
  description:
    'Lists the files under a folder of the workspace (all files when no path is given), one path per line, with sizes.',
  input: z
    .object({ path: path.optional().describe('A folder relative to the workspace root; omit for the whole workspace.') })
    .strict(),
  async run(input, ctx) {
    const { entries, truncated } = await ctx.workspace.list(input.path ?? '', ctx.limits.maxListEntries);
    if (entries.length === 0) return input.path ? `No files under "${input.path}".` : 'The workspace is empty.';
    const lines = entries.map((e) => `${e.path} (${e.size} bytes)`);
    if (truncated) lines.push(`… more files not shown (limit ${ctx.limits.maxListEntries}); list a subfolder.`);
    return lines.join('\n');
  },
});

export const editFile = defineTool({
  name: 'edit_file',
  description:
    'Replaces exactly one occurrence of old_string with new_string in a file. old_string must match the file ' +
    'exactly (whitespace included) and appear once; add surrounding lines to make it unique.',
  input: z
    .object({
      path,
      old_string: z.string().describe('The exact text to replace; must appear exactly once.'),
      new_string: z.string().describe('The replacement text.'),
    })
    .strict(),
  /**
   * A read-modify-write that loses no update: the write names the version read (a conditional
   * PutObject), and a write that finds the file changed reads it again, up to `editAttempts`
   * times. The write records the call's `toolUseId`, so a retried call that finds its own write
   * still the latest answers as done instead of applying the edit twice (invariant 3,
   * docs/ARCHITECTURE.md).
   */
  async run(input, ctx) {
    if (input.old_string === '') throw new ToolFailure('old_string is empty; give the exact text to replace.');
    const done = `Edited ${checkPath(input.path)}: replaced 1 occurrence.`;
    for (let attempt = 1; attempt <= editAttempts; attempt++) {
      const file = await readFileVersioned(input.path, ctx);
      if (ctx.toolUseId !== undefined && file.writtenBy === ctx.toolUseId) return done;
      const text = decodeText(input.path, file.bytes);
      const first = text.indexOf(input.old_string);
      if (first === -1) {
        throw new ToolFailure(`old_string was not found in "${input.path}"; read the file and copy the text exactly.`);
      }
      const count = countOccurrences(text, input.old_string);
      if (count > 1) {
        throw new ToolFailure(
          `old_string appears ${count} times in "${input.path}"; include more surrounding text so it appears once.`,
        );
      }
      const next = text.slice(0, first) + input.new_string + text.slice(first + input.old_string.length);
      try {
        await ctx.workspace.write(input.path, encodeText(next, ctx), {
          ifVersion: file.version,
          ...(ctx.toolUseId !== undefined ? { writtenBy: ctx.toolUseId } : {}),
        });
        return done;
      } catch (error) {
        if (!(error instanceof WriteConflict)) throw error;
        await backoff(attempt);
      }
    }
    throw new ToolFailure(
      `"${input.path}" kept changing while it was edited (${editAttempts} attempts); read it again and retry the edit.`,
    );
  },
});

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) count++;
  return count;
}
