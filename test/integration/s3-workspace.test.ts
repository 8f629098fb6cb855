import { describe, expect, it } from 'vitest';
import { S3Workspace, workspacePrefix } from '../../functions/adapters/s3/workspace.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { conversationIdOf } from '../../functions/core/conversation.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { PathRejected } from '../../functions/core/workspace.js';
import { ScriptedModel } from '../../functions/adapters/model/scripted.js';
import { newRun } from '../support/memory.js';
import { useLocalAws } from '../support/local-aws.js';
import { use } from '../support/agents.js';

const aws = useLocalAws();
const bytes = (text: string) => new TextEncoder().encode(text);

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

  it('refuses run ids that could name another prefix', () => {
    for (const runId of ['', '..', 'a/b', 'a\\b', 'x'.repeat(200)]) expect(() => workspacePrefix(runId)).toThrow();
    expect(workspacePrefix('run-123')).toBe('workspaces/run-123/');
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
