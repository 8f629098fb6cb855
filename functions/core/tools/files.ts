/**
 * The workspace tools. Paths are checked by the workspace (invariant 7, docs/ARCHITECTURE.md); a refused path is a
 * tool error the model can correct.
 */
import * as z from 'zod';
import { checkPath } from '../workspace.js';
import { type ToolContext, ToolFailure, defineTool } from './registry.js';

const path = z.string().describe('A path relative to the workspace root, such as "src/index.ts".');
const utf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

async function readText(filePath: string, ctx: ToolContext): Promise<string> {
  const bytes = await ctx.workspace.read(filePath);
  if (bytes === undefined) {
    throw new ToolFailure(`no file at "${checkPath(filePath)}". Use list_files to see which files exist.`);
  }
  if (bytes.byteLength > ctx.limits.maxFileBytes) {
    throw new ToolFailure(`"${filePath}" is ${bytes.byteLength} bytes, over the ${ctx.limits.maxFileBytes}-byte limit.`);
  }
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ToolFailure(`"${filePath}" is not UTF-8 text, so it cannot be shown.`);
  }
}

async function writeText(filePath: string, content: string, ctx: ToolContext): Promise<number> {
  const bytes = encoder.encode(content);
  if (bytes.byteLength > ctx.limits.maxFileBytes) {
    throw new ToolFailure(
      `the content is ${bytes.byteLength} bytes, over the ${ctx.limits.maxFileBytes}-byte file limit; split it into smaller files.`,
    );
  }
  await ctx.workspace.write(filePath, bytes);
  return bytes.byteLength;
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
    const bytes = await writeText(input.path, input.content, ctx);
    return `Wrote ${bytes} bytes to ${checkPath(input.path)}.`;
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
  async run(input, ctx) {
    if (input.old_string === '') throw new ToolFailure('old_string is empty; give the exact text to replace.');
    const text = await readText(input.path, ctx);
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
    await writeText(input.path, next, ctx);
    return `Edited ${checkPath(input.path)}: replaced 1 occurrence.`;
  },
});

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) count++;
  return count;
}
