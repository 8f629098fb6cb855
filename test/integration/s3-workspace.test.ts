import { PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { S3Workspace, copyWorkspaceFiles, workspacePrefix } from '../../functions/adapters/s3/workspace.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { builtinTools } from '../../functions/core/tools/builtin/builtin.js';
import { ToolRegistry, defaultToolLimits } from '../../functions/core/tools/registry.js';
import { PathRejected, WriteConflict } from '../../functions/core/workspace/types.js';
import { ScriptedModel } from '../../functions/adapters/model/scripted.js';
import { newRun } from '../support/memory.js';
import { useLocalAws } from '../support/local-aws.js';
import { use } from '../support/agents.js';
import { S3MemoryStore } from '../../functions/adapters/s3/memory.js';
import { memoryPrefix } from '../../functions/core/memory/scope.js';
import { memoryTool } from '../../functions/core/memory/tool.js';
import { defaultMemoryLimits } from '../../functions/core/memory/types.js';

const aws = useLocalAws();
const bytes = (text: string) => new TextEncoder().encode(text);

/** A path of `size` bytes in segments of 99 (a file system stand-in keeps each segment as a file name). */
function longPath(size: number): string {
  return Array.from({ length: size }, (_, i) => (i % 100 === 99 ? '/' : 'a')).join('');
}

function workspace(runId: string) {
  const { s3 } = awsClients(readEnv(aws.env));
  return new S3Workspace(s3, aws.emulators.bucket, runId);
}

describe('S3Workspace', () => {
  it('reads back exactly the bytes written, under the run’s prefix', async () => {
    const ws = workspace('ws-1');
    const content = new Uint8Array([0, 1, 2, 255, 254, ...bytes('ünï 日本')]);
    await ws.write('dir/a b/ü.bin', content);
    expect(await ws.read('./dir//a b/ü.bin')).toEqual(content);
    expect(await ws.read('dir/missing')).toBeUndefined();
    expect((await aws.allKeys()).filter((k) => k.startsWith('workspaces/ws-1/'))).toEqual(['workspaces/ws-1/dir/a b/ü.bin']);
  });

  it('lists across pages and stops at the limit', async () => {
    const ws = workspace('ws-2');
    const names = Array.from({ length: 1005 }, (_, i) => `f/${i.toString().padStart(4, '0')}.txt`);
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((n) => ws.write(n, bytes('x'))));
    }
    await ws.write('other.txt', bytes('yy'));

    const all = await ws.list('f', 2000);
    expect(all.truncated).toBe(false);
    expect(all.entries.map((e) => e.path)).toEqual(names);
    expect(all.entries.every((e) => e.size === 1)).toBe(true);
    const some = await ws.list('', 10);
    expect(some).toEqual({ entries: names.slice(0, 10).map((path) => ({ path, size: 1 })), truncated: true });
  });

  it('refuses paths that leave the workspace before touching S3', async () => {
    const ws = workspace('ws-3');
    for (const path of ['../x', '/etc/passwd', 'a/../../b', 'a\\b', 'a\0b', 'x'.repeat(2000)]) {
      await expect(ws.write(path, bytes('x'))).rejects.toBeInstanceOf(PathRejected);
      await expect(ws.read(path)).rejects.toBeInstanceOf(PathRejected);
    }
    expect((await aws.allKeys()).filter((k) => k.startsWith('workspaces/ws-3'))).toEqual([]);
  });

  it('fits the whole key in 1,024 bytes: a path that fills the rest is kept, one byte more is refused before S3', async () => {
    const ws = workspace('ws-long');
    const room = 1024 - 'workspaces/ws-long/'.length;
    await ws.write(longPath(room), bytes('fits'));
    expect(await ws.read(longPath(room))).toEqual(bytes('fits'));
    for (const size of [room + 1, 1024]) {
      await expect(ws.write(longPath(size), bytes('x'))).rejects.toThrow(PathRejected);
      await expect(ws.read(longPath(size))).rejects.toThrow(`at most ${room} bytes`);
    }
    // The emulator refuses such keys as S3 does, so a path checked alone would fail in the store.
    const { s3 } = awsClients(readEnv(aws.env));
    await expect(
      s3.send(new PutObjectCommand({ Bucket: aws.emulators.bucket, Key: `workspaces/ws-long/${longPath(room + 1)}`, Body: 'x' })),
    ).rejects.toMatchObject({ name: 'KeyTooLongError' });
    expect((await aws.allKeys()).filter((k) => k.startsWith('workspaces/ws-long/'))).toEqual([`workspaces/ws-long/${longPath(room)}`]);
  });

  it('writes over the version it read, and refuses a write over a changed or removed file', async () => {
    const ws = workspace('ws-cas');
    await ws.write('a.txt', bytes('one'), { writtenBy: 'toolu_1' });
    const first = await ws.readVersioned('a.txt');
    expect(first).toEqual({ bytes: bytes('one'), version: expect.any(String), writtenBy: 'toolu_1' });
    await ws.write('a.txt', bytes('two'), { ifVersion: first?.version ?? '' });
    await expect(ws.write('a.txt', bytes('stale'), { ifVersion: first?.version ?? '' })).rejects.toThrow(WriteConflict);
    await expect(ws.write('gone.txt', bytes('x'), { ifVersion: first?.version ?? '' })).rejects.toThrow(WriteConflict);
    expect(await ws.readVersioned('a.txt')).toEqual({ bytes: bytes('two'), version: expect.any(String) });
    expect(await ws.read('gone.txt')).toBeUndefined();
  });

  it('refuses run ids that could name another prefix', () => {
    for (const runId of ['', '..', 'a/b', 'a\\b', 'x'.repeat(200)]) expect(() => workspacePrefix(runId)).toThrow();
    expect(workspacePrefix('run-123')).toBe('workspaces/run-123/');
  });
});

describe("a fork's copy of a workspace", () => {
  it('copies every file inside the bucket, bytes and writer kept, whatever the path, and leaves files the fork holds alone', async () => {
    const { s3 } = awsClients(readEnv(aws.env));
    const copy = copyWorkspaceFiles(s3, aws.emulators.bucket);
    const source = workspace('ws-fork-source');
    const paths = ['a.md', 'dir/a b/ü 日本.txt', 'odd/+%20?#&=.txt', 'deep/1/2/3/4.bin'];
    for (const [i, path] of paths.entries()) await source.write(path, new Uint8Array([i, 255, 0, ...bytes(path)]), { writtenBy: `toolu_${i}` });
    const listed = (await source.list('', 10)).entries.map((e) => e.path);

    expect(await copy('ws-fork-source', 'ws-fork', listed)).toBe(4);
    const fork = workspace('ws-fork');
    for (const [i, path] of paths.entries()) {
      expect(await fork.readVersioned(path)).toEqual({ bytes: new Uint8Array([i, 255, 0, ...bytes(path)]), version: expect.any(String), writtenBy: `toolu_${i}` });
    }
    expect((await aws.allKeys()).filter((k) => k.startsWith('workspaces/ws-fork/')).sort()).toEqual(paths.map((p) => `workspaces/ws-fork/${p}`).sort());

    // A repeated copy (a retried request) copies nothing the fork holds, even where it changed since.
    await fork.write('a.md', bytes('changed by the fork'));
    expect(await copy('ws-fork-source', 'ws-fork', listed)).toBe(0);
    expect(await fork.read('a.md')).toEqual(bytes('changed by the fork'));
    expect(await source.read('a.md')).toEqual(new Uint8Array([0, 255, 0, ...bytes('a.md')]));
  });
});

describe('confinement through the tool step', () => {
  it('answers escaping paths with tool errors and writes nothing outside the run’s prefix', async () => {
    const wiring = aws.wiring({ model: new ScriptedModel() });
    const model = wiring.model as ScriptedModel;
    const bad = ['../x', '/etc/passwd', 'a/../../b', 'a\\b', 'a\0b', 'x'.repeat(2000), '..', '../conf-2/stolen.txt'];
    await wiring.runs.create(newRun('conf-1', 'write files'));
    model.addTurn(use(...bad.map((path, i): [string, string, unknown] => [`toolu_${i}`, 'write_file', { path, content: 'pwned' }]), ['toolu_ok', 'write_file', { path: 'ok.txt', content: 'fine' }]));
    const before = new Set(await aws.allKeys());

    const step = await inferenceStep({ runId: 'conf-1', agent: 'single', iteration: 0 }, wiring);
    const results = await Promise.all(
      step.toolCalls.map((c) => toolStep({ runId: 'conf-1', agent: 'single', seq: step.seq, toolUseId: c.id }, wiring)),
    );

    expect(results.map((r) => r.isError)).toEqual([...bad.map(() => true), false]);
    const turn = await wiring.conversations.loadTurn(conversationIdOf('conf-1', 'single'), step.seq);
    expect(turn?.results.slice(0, bad.length).map((r) => r?.content)).toEqual([
      expect.stringContaining('contains ".."'),
      expect.stringContaining('is absolute'),
      expect.stringContaining('contains ".."'),
      expect.stringContaining('backslash'),
      expect.stringContaining('NUL or control'),
      expect.stringContaining('longer than 1024 bytes'),
      expect.stringContaining('contains ".."'),
      expect.stringContaining('contains ".."'),
    ]);
    const added = (await aws.allKeys()).filter((k) => !before.has(k));
    expect(added).toEqual(['workspaces/conf-1/ok.txt']);
  });
});

describe('edit_file on S3', () => {
  it('applies every one of 8 parallel edits of one file (as many as the agent loop runs at once): none is lost', async () => {
    const ws = workspace('edit-race');
    const lines = Array.from({ length: 8 }, (_, i) => `line ${i}: todo`);
    await ws.write('list.txt', bytes(lines.join('\n')));
    const registry = new ToolRegistry(builtinTools);
    const ctx = { runId: 'edit-race', workspace: ws, limits: defaultToolLimits };
    const results = await Promise.all(
      lines.map((line, i) =>
        registry.execute({ type: 'tool_use', id: `toolu_${i}`, name: 'edit_file', input: { path: 'list.txt', old_string: line, new_string: `line ${i}: done` } }, ctx),
      ),
    );
    expect(results.filter((r) => r.is_error)).toEqual([]);
    expect(new TextDecoder().decode(await ws.read('list.txt'))).toBe(lines.map((_, i) => `line ${i}: done`).join('\n'));
  });

  it('answers a retried call whose write is already the latest as done, without editing again', async () => {
    const ws = workspace('edit-retry');
    await ws.write('n.txt', bytes('x'));
    const registry = new ToolRegistry(builtinTools);
    const ctx = { runId: 'edit-retry', workspace: ws, limits: defaultToolLimits };
    const call = { type: 'tool_use' as const, id: 'toolu_grow', name: 'edit_file', input: { path: 'n.txt', old_string: 'x', new_string: 'xx' } };
    const first = await registry.execute(call, ctx);
    const again = await registry.execute(call, ctx);
    expect(again).toEqual(first);
    expect(new TextDecoder().decode(await ws.read('n.txt'))).toBe('xx');
  });
});

describe('a memory scope on S3', () => {
  it('keeps both of two concurrent str_replace edits of one file, and creates with If-None-Match only where no file is', async () => {
    const { s3 } = awsClients(readEnv(aws.env));
    const store = new S3MemoryStore(s3, aws.emulators.bucket, memoryPrefix('owner', { principal: 'alice', tenant: 'acme' }));
    await store.write('todo.md', bytes('a: todo\nb: todo'));
    const registry = new ToolRegistry([memoryTool]);
    const ctx = { runId: 'mem-race', workspace: workspace('mem-race'), limits: defaultToolLimits, memory: { scope: 'owner' as const, store, limits: defaultMemoryLimits } };
    const edits = ['a', 'b'].map((line) =>
      registry.execute({ type: 'tool_use', id: `toolu_${line}`, name: 'memory', input: { command: 'str_replace', path: '/memories/todo.md', old_str: `${line}: todo`, new_str: `${line}: done` } }, ctx),
    );
    expect((await Promise.all(edits)).filter((r) => r.is_error)).toEqual([]);
    expect(new TextDecoder().decode((await store.read('todo.md'))?.bytes)).toBe('a: done\nb: done');
    await expect(store.write('todo.md', bytes('over'), { ifAbsent: true })).rejects.toThrow(WriteConflict);
    expect((await store.list(10)).entries.map((e) => e.path)).toEqual(['todo.md']);
  });
});
