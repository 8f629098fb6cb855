/**
 * Anthropic's memory tool (`memory_20250818`, client-side): the model's commands run here, on the
 * run's memory scope (`ToolContext.memory`). Paths are checked before the store is touched; every
 * failure the model can correct is a tool error (invariant 5), worded as the reference
 * implementation words it. Edits are read-modify-writes over the version read (conditional
 * PutObject), tried again when another run's write came between, so concurrent edits all land.
 */
import * as z from 'zod';
import { type ToolContext, ToolFailure } from '../tools/types.js';
import { defineTool, describeIssues } from '../tools/registry.js';
import { PathRejected, WriteConflict } from '../workspace/types.js';
import { capView, insertAt, replaceOnce, viewDirectory, viewFile } from './commands.js';
import { checkMemoryPath } from './paths.js';
import type { MemoryEntry, MemoryFile, RunMemory } from './types.js';

/** The tool's name, as Anthropic's tool type fixes it. */
export const memoryToolName = 'memory';

/** The Messages API's type of the tool: the API supplies its description and schema. */
export const memoryToolType = 'memory_20250818';

/** How often an edit reads again after another write came between its read and its write. */
export const memoryEditAttempts = 10;

const path = z.string().describe('A path under /memories, such as /memories/notes.md.');

/** The commands, as Anthropic's SDK types them (`BetaMemoryTool20250818Command`). */
export const MemoryCommand = z.discriminatedUnion('command', [
  z.object({ command: z.literal('view'), path, view_range: z.array(z.number().int()).length(2).optional() }),
  z.object({ command: z.literal('create'), path, file_text: z.string() }),
  z.object({ command: z.literal('str_replace'), path, old_str: z.string(), new_str: z.string() }),
  z.object({ command: z.literal('insert'), path, insert_line: z.number().int(), insert_text: z.string() }),
  z.object({ command: z.literal('delete'), path }),
  z.object({ command: z.literal('rename'), old_path: path, new_path: path }),
]);

export type MemoryCommand = z.infer<typeof MemoryCommand>;

/**
 * The input as one object (a tool's input schema must be one; Bedrock's custom tool is offered
 * this), checked per command when the call runs.
 */
const MemoryInput = z.object({
  command: z.enum(['view', 'create', 'str_replace', 'insert', 'delete', 'rename']).describe('The operation.'),
  path: path.optional(),
  view_range: z.array(z.number().int()).optional().describe('view: [first line, last line], 1-based; -1 for the end.'),
  file_text: z.string().optional().describe('create: the whole content of the file.'),
  old_str: z.string().optional().describe('str_replace: the text to replace; must appear exactly once.'),
  new_str: z.string().optional().describe('str_replace: the replacement.'),
  insert_line: z.number().int().optional().describe('insert: the line after which to insert (0 for the top).'),
  insert_text: z.string().optional().describe('insert: the text to insert.'),
  old_path: path.optional().describe('rename: the file or folder to move.'),
  new_path: path.optional().describe('rename: where it goes.'),
});

const utf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

function backoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(1000, 25 * 2 ** attempt)));
}

function memoryOf(ctx: ToolContext): RunMemory {
  if (!ctx.memory) throw new ToolFailure('this run has no memory; start it with memory: { scope } to use the memory tool.');
  return ctx.memory;
}

/** A path checked for the tool: refused paths are tool errors. */
function checked(input: string, options: { allowRoot?: boolean } = {}): string {
  try {
    return checkMemoryPath(input, options);
  } catch (error) {
    if (error instanceof PathRejected) throw new ToolFailure(error.message);
    throw error;
  }
}

function decode(bytes: Uint8Array, shown: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ToolFailure(`${shown} is not UTF-8 text, so it cannot be shown.`);
  }
}

/** Every file of the scope (a scope holds at most `maxFiles`, so one page of the listing). */
async function allFiles(memory: RunMemory): Promise<MemoryEntry[]> {
  return (await memory.store.list(memory.limits.maxFiles + 1)).entries;
}

/**
 * Refuses a write that would take the scope past its limits: a file over `maxFileBytes`, more than
 * `maxFiles` files, more than `maxScopeBytes` in all. `replacing` is the file's current size, if any.
 */
function checkLimits(memory: RunMemory, shown: string, bytes: Uint8Array, entries: readonly MemoryEntry[] | undefined, replacing: number | undefined): void {
  const { maxFileBytes, maxFiles, maxScopeBytes } = memory.limits;
  if (bytes.byteLength > maxFileBytes) {
    throw new ToolFailure(`${shown} would be ${bytes.byteLength} bytes, over the ${maxFileBytes}-byte limit of a memory file; keep memories short, or split them into several files.`);
  }
  if (!entries) return;
  if (replacing === undefined && entries.length + 1 > maxFiles) {
    throw new ToolFailure(`this memory holds ${entries.length} files, the most it may (${maxFiles}); delete or merge files before creating ${shown}.`);
  }
  const total = entries.reduce((sum, entry) => sum + entry.size, 0) - (replacing ?? 0) + bytes.byteLength;
  if (total > maxScopeBytes) {
    throw new ToolFailure(`writing ${shown} would make this memory ${total} bytes, over its ${maxScopeBytes}-byte limit; delete or shorten files first.`);
  }
}

async function view(memory: RunMemory, input: string, range: readonly number[] | undefined): Promise<string> {
  const relative = checked(input, { allowRoot: true });
  const file = relative === '' ? undefined : await memory.store.read(relative);
  if (file) return capView(viewFile(decode(file.bytes, input), input, range), memory.limits.maxViewChars);
  // Not a file: a folder, when files are under it.
  const entries = await allFiles(memory);
  if (relative !== '' && !entries.some((entry) => entry.path.startsWith(`${relative}/`))) {
    throw new ToolFailure(`The path ${input} does not exist. Please provide a valid path.`);
  }
  return capView(viewDirectory(relative, entries), memory.limits.maxViewChars);
}

async function create(memory: RunMemory, input: string, text: string): Promise<string> {
  const relative = checked(input);
  const bytes = encoder.encode(text);
  checkLimits(memory, input, bytes, undefined, 0);
  const entries = await allFiles(memory);
  if (entries.some((entry) => entry.path.startsWith(`${relative}/`))) throw new ToolFailure(`${input} is a directory; name a file under it.`);
  checkLimits(memory, input, bytes, entries, entries.find((entry) => entry.path === relative)?.size);
  await memory.store.write(relative, bytes);
  return `File created successfully at: ${input}`;
}

/**
 * Changes a file with `change` over the version read, reading again when another write came
 * between; a retried call that finds its own write the latest answers without changing it again.
 */
async function edit(memory: RunMemory, ctx: ToolContext, input: string, change: (text: string) => { text: string; answer: string }): Promise<string> {
  const relative = checked(input);
  for (let attempt = 1; attempt <= memoryEditAttempts; attempt++) {
    const file: MemoryFile | undefined = await memory.store.read(relative);
    if (!file) throw new ToolFailure(`The path ${input} does not exist. Please provide a valid path.`);
    if (ctx.toolUseId !== undefined && file.writtenBy === ctx.toolUseId) return `The file ${input} has been edited.`;
    const { text, answer } = change(decode(file.bytes, input));
    const bytes = encoder.encode(text);
    // A file that grows may take the scope past its limit: only then is the scope listed.
    const grows = bytes.byteLength > file.bytes.byteLength;
    checkLimits(memory, input, bytes, grows ? await allFiles(memory) : undefined, file.bytes.byteLength);
    try {
      await memory.store.write(relative, bytes, { ifVersion: file.version, ...(ctx.toolUseId !== undefined ? { writtenBy: ctx.toolUseId } : {}) });
      return answer;
    } catch (error) {
      if (!(error instanceof WriteConflict)) throw error;
      await backoff(attempt);
    }
  }
  throw new ToolFailure(`${input} kept changing while it was edited (${memoryEditAttempts} attempts); view it again and retry.`);
}

/** The files a path names: the file itself, or every file under the folder. */
function filesAt(relative: string, entries: readonly MemoryEntry[]): MemoryEntry[] {
  const file = entries.find((entry) => entry.path === relative);
  return file ? [file] : entries.filter((entry) => entry.path.startsWith(`${relative}/`));
}

async function remove(memory: RunMemory, input: string): Promise<string> {
  const relative = checked(input, { allowRoot: true });
  if (relative === '') throw new ToolFailure('Cannot delete the /memories directory itself');
  const files = filesAt(relative, await allFiles(memory));
  if (!files.length) throw new ToolFailure(`The path ${input} does not exist`);
  await memory.store.remove(files.map((file) => file.path));
  return `Successfully deleted ${input}`;
}

async function rename(memory: RunMemory, from: string, to: string): Promise<string> {
  const source = checked(from, { allowRoot: true });
  if (source === '') throw new ToolFailure('Cannot rename the /memories directory itself');
  const target = checked(to);
  if (target === source || target.startsWith(`${source}/`)) throw new ToolFailure(`Cannot move ${from} into itself (${to}).`);
  const entries = await allFiles(memory);
  const files = filesAt(source, entries);
  if (!files.length) throw new ToolFailure(`The path ${from} does not exist`);
  if (filesAt(target, entries).length) throw new ToolFailure(`The destination ${to} already exists`);
  for (const file of files) {
    const read = await memory.store.read(file.path);
    if (!read) continue;
    const moved = target + file.path.slice(source.length);
    try {
      await memory.store.write(moved, read.bytes, { ifAbsent: true });
    } catch (error) {
      if (error instanceof WriteConflict) throw new ToolFailure(`The destination ${to} already exists`);
      throw error;
    }
  }
  await memory.store.remove(files.map((file) => file.path));
  return `Successfully renamed ${from} to ${to}`;
}

/** The memory tool: runs one command on the run's memory scope. */
export const memoryTool = defineTool({
  name: memoryToolName,
  description:
    'Your memory directory, /memories: files that persist across conversations. Commands: view (a folder, or a file with line numbers), ' +
    'create, str_replace, insert, delete, rename. Check it before starting a task; record what you learn as you go.',
  input: MemoryInput,
  async run(raw, ctx) {
    const parsed = MemoryCommand.safeParse(raw);
    if (!parsed.success) throw new ToolFailure(`invalid input for ${raw.command}: ${describeIssues(parsed.error)}`);
    const memory = memoryOf(ctx);
    const input = parsed.data;
    switch (input.command) {
      case 'view':
        return view(memory, input.path, input.view_range);
      case 'create':
        return create(memory, input.path, input.file_text);
      case 'str_replace':
        return edit(memory, ctx, input.path, (text) => replaceOnce(text, input.old_str, input.new_str, input.path));
      case 'insert':
        return edit(memory, ctx, input.path, (text) => ({ text: insertAt(text, input.insert_line, input.insert_text), answer: `The file ${input.path} has been edited.` }));
      case 'delete':
        return remove(memory, input.path);
      case 'rename':
        return rename(memory, input.old_path, input.new_path);
    }
  },
});

/** Whether a call's result shows what memory holds (view, and str_replace's snippet): content the model wrote after reading tool output, so untrusted. */
export function readsMemory(input: unknown): boolean {
  const command = (input as { command?: unknown } | null)?.command;
  return command === 'view' || command === 'str_replace';
}
