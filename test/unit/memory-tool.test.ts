import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { S3MemoryStore } from '../../functions/adapters/s3/memory.js';
import { toWire } from '../../functions/adapters/model/anthropic.js';
import { checkMemoryPath } from '../../functions/core/memory/paths.js';
import { memoryPrefix } from '../../functions/core/memory/scope.js';
import { memoryToolSpec } from '../../functions/core/memory/feature.js';
import { memoryTool } from '../../functions/core/memory/tool.js';
import { defaultMemoryLimits, InvalidMemory, type MemoryEntry, type MemoryFile, type MemoryLimits, type MemoryStore, type MemoryWriteOptions } from '../../functions/core/memory/types.js';
import { ToolRegistry, defaultToolLimits } from '../../functions/core/tools/registry.js';
import { PathRejected, WriteConflict } from '../../functions/core/workspace/types.js';
import { MemoryWorkspace } from '../support/memory.js';

/** A memory scope in memory, with S3's conditional writes, counting its requests; each call yields once, so calls interleave. */
class FakeMemoryStore implements MemoryStore {
  readonly files = new Map<string, { text: string; version: number; writtenBy?: string }>();
  requests = 0;
  private next = 1;

  async list(limit: number): Promise<{ entries: MemoryEntry[]; truncated: boolean }> {
    this.requests++;
    await Promise.resolve();
    const entries = [...this.files.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([path, f]) => ({ path, size: Buffer.byteLength(f.text), updatedAt: '2026-01-01T00:00:00.000Z' }));
    return { entries: entries.slice(0, limit), truncated: entries.length > limit };
  }

  async read(path: string): Promise<MemoryFile | undefined> {
    this.requests++;
    await Promise.resolve();
    const file = this.files.get(path);
    return file && { bytes: new TextEncoder().encode(file.text), version: String(file.version), ...(file.writtenBy ? { writtenBy: file.writtenBy } : {}) };
  }

  async write(path: string, bytes: Uint8Array, options: MemoryWriteOptions = {}): Promise<void> {
    this.requests++;
    await Promise.resolve();
    const current = this.files.get(path);
    if (options.ifVersion !== undefined && String(current?.version) !== options.ifVersion) throw new WriteConflict('changed');
    if (options.ifAbsent && current) throw new WriteConflict('exists');
    this.files.set(path, { text: new TextDecoder().decode(bytes), version: this.next++, ...(options.writtenBy ? { writtenBy: options.writtenBy } : {}) });
  }

  async remove(paths: readonly string[]): Promise<void> {
    this.requests++;
    for (const path of paths) this.files.delete(path);
  }
}

const registry = new ToolRegistry([memoryTool]);

function memoryWith(files: Record<string, string> = {}, limits: Partial<MemoryLimits> = {}) {
  const store = new FakeMemoryStore();
  for (const [path, text] of Object.entries(files)) void store.write(path, new TextEncoder().encode(text));
  const ctx = { runId: 'r1', workspace: new MemoryWorkspace(), limits: defaultToolLimits, memory: { scope: 'owner' as const, store, limits: { ...defaultMemoryLimits, ...limits } } };
  let n = 0;
  const call = async (input: Record<string, unknown>) => {
    const result = await registry.execute({ type: 'tool_use', id: `toolu_${n++}`, name: 'memory', input }, ctx);
    return { text: result.content, error: result.is_error === true };
  };
  return { store, call };
}

describe('memory paths', () => {
  it('takes /memories and paths under it, relative to it', () => {
    expect(checkMemoryPath('/memories/notes/a.md')).toBe('notes/a.md');
    expect(checkMemoryPath('/memories', { allowRoot: true })).toBe('');
  });

  it.each([
    ['notes.md', 'outside /memories'],
    ['/etc/passwd', 'outside /memories'],
    ['/memoriesX/a', 'outside /memories'],
    ['/memories/../workspaces/x', 'contains ".."'],
    ['/memories/a\\b', 'backslash'],
    ['/memories/a\u0000b', 'control character'],
    [`/memories/${'a'.repeat(1000)}`, 'bytes'],
  ])('refuses %j (%s)', (path, reason) => {
    expect(() => checkMemoryPath(path)).toThrow(PathRejected);
    expect(() => checkMemoryPath(path)).toThrow(reason);
  });

  it('refuses /memories itself where a file is needed', () => {
    expect(() => checkMemoryPath('/memories')).toThrow('names /memories itself');
  });
});

describe('memory scopes', () => {
  it('keys each owner, tenant and session apart, with safe fixed-length keys', () => {
    const alice = { principal: 'https://issuer#alice/../x', tenant: 'acme' };
    const prefixes = [
      memoryPrefix('owner', alice),
      memoryPrefix('owner', { principal: alice.principal, tenant: 'globex' }),
      memoryPrefix('owner', { principal: 'bob', tenant: 'acme' }),
      memoryPrefix('tenant', alice),
      memoryPrefix('tenant', { principal: 'bob', tenant: 'acme' }),
      memoryPrefix('session', alice, 's1'),
      memoryPrefix('session', alice, 's2'),
    ];
    for (const prefix of prefixes) expect(prefix).toMatch(/^memories\/(owner|tenant|session)\/[A-Za-z0-9_-]{22}\/$/);
    // One tenant shares one tenant scope; everything else is its own.
    expect(prefixes[3]).toBe(prefixes[4]);
    expect(new Set(prefixes).size).toBe(prefixes.length - 1);
  });

  it('refuses a tenant scope without a tenant and a session scope without a session, naming memory.scope', () => {
    expect(() => memoryPrefix('tenant', { principal: 'alice' })).toThrow(InvalidMemory);
    const error = (() => {
      try {
        memoryPrefix('session', { principal: 'alice' });
      } catch (caught) {
        return caught as InvalidMemory;
      }
    })();
    expect(error?.issues).toEqual([{ path: 'memory.scope', message: expect.stringContaining('sessionId') }]);
  });
});

describe('the memory tool', () => {
  it('views a folder up to 2 levels deep and a file with line numbers, as Anthropic\'s reference does', async () => {
    const { call } = memoryWith({ 'prefs.md': 'tabs\nno emojis', 'projects/acme/facts.md': 'x'.repeat(2048), 'projects/acme/deep/z.md': 'z' });
    expect((await call({ command: 'view', path: '/memories' })).text).toBe(
      [
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:",
        '2.0K\t/memories',
        '14B\t/memories/prefs.md',
        '2.0K\t/memories/projects/',
        '2.0K\t/memories/projects/acme/',
      ].join('\n'),
    );
    expect((await call({ command: 'view', path: '/memories/prefs.md' })).text).toBe("Here's the content of /memories/prefs.md with line numbers:\n     1\ttabs\n     2\tno emojis");
    expect((await call({ command: 'view', path: '/memories/prefs.md', view_range: [2, -1] })).text).toBe("Here's the content of /memories/prefs.md with line numbers:\n     2\tno emojis");
    expect(await call({ command: 'view', path: '/memories/none.md' })).toEqual({ error: true, text: 'memory failed: The path /memories/none.md does not exist. Please provide a valid path.' });
  });

  it('answers a file view with one request to the store, and a folder view with one listing', async () => {
    const { store, call } = memoryWith({ 'a.md': 'A' });
    store.requests = 0;
    await call({ command: 'view', path: '/memories/a.md' });
    expect(store.requests).toBe(1);
    store.requests = 0;
    await call({ command: 'view', path: '/memories' });
    expect(store.requests).toBe(1);
  });

  it('replaces only a unique old_str, showing the changed lines', async () => {
    const { store, call } = memoryWith({ 'a.md': 'one\ntwo\ntwo\nthree' });
    expect(await call({ command: 'str_replace', path: '/memories/a.md', old_str: 'two', new_str: '2' })).toEqual({
      error: true,
      text: 'memory failed: No replacement was performed. Multiple occurrences of old_str `two` in lines: 2, 3. Please ensure it is unique',
    });
    expect((await call({ command: 'str_replace', path: '/memories/a.md', old_str: 'four', new_str: '4' })).text).toContain('did not appear verbatim in /memories/a.md');
    expect(await call({ command: 'str_replace', path: '/memories/a.md', old_str: 'three', new_str: '3' })).toEqual({
      error: false,
      text: 'The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     2\ttwo\n     3\ttwo\n     4\t3',
    });
    expect(store.files.get('a.md')?.text).toBe('one\ntwo\ntwo\n3');
  });

  it('inserts after a line (0 at the top), and refuses a line outside the file', async () => {
    const { store, call } = memoryWith({ 'a.md': 'a\nb' });
    expect(await call({ command: 'insert', path: '/memories/a.md', insert_line: 1, insert_text: 'between\n' })).toEqual({ error: false, text: 'The file /memories/a.md has been edited.' });
    await call({ command: 'insert', path: '/memories/a.md', insert_line: 0, insert_text: 'top' });
    expect(store.files.get('a.md')?.text).toBe('top\na\nbetween\nb');
    expect((await call({ command: 'insert', path: '/memories/a.md', insert_line: 9, insert_text: 'x' })).text).toContain('It should be within the range of lines of the file: [0, 4]');
  });

  it('creates, renames a folder and deletes, refusing an existing destination and the root', async () => {
    const { store, call } = memoryWith({ 'old/a.md': 'A', 'old/b/c.md': 'C', 'taken.md': 'T' });
    expect((await call({ command: 'create', path: '/memories/new.md', file_text: 'N' })).text).toBe('File created successfully at: /memories/new.md');
    expect((await call({ command: 'rename', old_path: '/memories/new.md', new_path: '/memories/taken.md' })).text).toContain('The destination /memories/taken.md already exists');
    expect((await call({ command: 'rename', old_path: '/memories/old', new_path: '/memories/moved' })).text).toBe('Successfully renamed /memories/old to /memories/moved');
    expect([...store.files.keys()].sort()).toEqual(['moved/a.md', 'moved/b/c.md', 'new.md', 'taken.md']);
    expect((await call({ command: 'delete', path: '/memories/moved' })).text).toBe('Successfully deleted /memories/moved');
    expect((await call({ command: 'delete', path: '/memories' })).text).toContain('Cannot delete the /memories directory itself');
    expect([...store.files.keys()].sort()).toEqual(['new.md', 'taken.md']);
  });

  it('answers paths that escape /memories with tool errors, touching nothing', async () => {
    const { store, call } = memoryWith();
    for (const path of ['/workspaces/r1/x', '/memories/../../x', 'memories/a.md']) {
      const answer = await call({ command: 'create', path, file_text: 'x' });
      expect(answer.error).toBe(true);
    }
    expect(store.requests).toBe(0);
  });

  it('refuses a file over the file limit, a file past the count limit, and a scope past its size limit', async () => {
    const { store, call } = memoryWith({ 'a.md': 'x'.repeat(60) }, { maxFileBytes: 100, maxFiles: 2, maxScopeBytes: 150 });
    expect((await call({ command: 'create', path: '/memories/big.md', file_text: 'x'.repeat(101) })).text).toContain('over the 100-byte limit of a memory file');
    expect((await call({ command: 'create', path: '/memories/b.md', file_text: 'x'.repeat(100) })).text).toContain('over its 150-byte limit');
    expect((await call({ command: 'create', path: '/memories/b.md', file_text: 'x' })).error).toBe(false);
    expect((await call({ command: 'create', path: '/memories/c.md', file_text: 'x' })).text).toContain('holds 2 files, the most it may (2)');
    expect((await call({ command: 'str_replace', path: '/memories/b.md', old_str: 'x', new_str: 'y'.repeat(95) })).text).toContain('over its 150-byte limit');
    expect([...store.files.keys()]).toEqual(['a.md', 'b.md']);
  });

  it('cuts a long view with a marker', async () => {
    const { call } = memoryWith({ 'a.md': 'line\n'.repeat(100) }, { maxViewChars: 200 });
    const { text } = await call({ command: 'view', path: '/memories/a.md' });
    expect(text).toMatch(/\n\[Memory view truncated: showing 200 of \d+ characters\. View a line range \(view_range\) or a subfolder to see the rest\.\]$/);
  });

  it('keeps both of two concurrent inserts into one file', async () => {
    const { store, call } = memoryWith({ 'log.md': 'start' });
    const answers = await Promise.all([call({ command: 'insert', path: '/memories/log.md', insert_line: 1, insert_text: 'A' }), call({ command: 'insert', path: '/memories/log.md', insert_line: 1, insert_text: 'B' })]);
    expect(answers.map((a) => a.error)).toEqual([false, false]);
    expect(store.files.get('log.md')?.text.split('\n').sort()).toEqual(['A', 'B', 'start']);
  });
});

describe('the memory tool on the wire', () => {
  it('is sent to the Messages API as Anthropic\'s tool type, its schema left to the API', () => {
    const body = toWire({ model: 'm', system: 's', tools: [memoryToolSpec], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], maxTokens: 10 });
    expect(body.tools).toEqual([{ type: 'memory_20250818', name: 'memory', cache_control: { type: 'ephemeral' } }]);
  });
});

describe('the memory tool on S3', () => {
  it('answers a view of a file with one GetObject and a view of /memories with one ListObjectsV2', async () => {
    const sent: string[] = [];
    const s3 = {
      send: async (command: object) => {
        sent.push(command.constructor.name);
        if (command instanceof GetObjectCommand) return { ETag: '"1"', Body: { transformToByteArray: async () => new TextEncoder().encode('tea') } };
        return { Contents: [{ Key: `${prefix}a.md`, Size: 3, LastModified: new Date(0) }], IsTruncated: false };
      },
    } as unknown as S3Client;
    const prefix = memoryPrefix('owner', { principal: 'alice' });
    const ctx = { runId: 'r1', workspace: new MemoryWorkspace(), limits: defaultToolLimits, memory: { scope: 'owner' as const, store: new S3MemoryStore(s3, 'bucket', prefix), limits: defaultMemoryLimits } };
    await registry.execute({ type: 'tool_use', id: 'toolu_f', name: 'memory', input: { command: 'view', path: '/memories/a.md' } }, ctx);
    await registry.execute({ type: 'tool_use', id: 'toolu_d', name: 'memory', input: { command: 'view', path: '/memories' } }, ctx);
    expect(sent).toEqual(['GetObjectCommand', 'ListObjectsV2Command']);
  });
});
