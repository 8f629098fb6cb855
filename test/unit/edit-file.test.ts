import { afterEach, describe, expect, it, vi } from 'vitest';
import { editAttempts, editFile, readFile } from '../../functions/core/tools/builtin/files.js';
import { ToolFailure } from '../../functions/core/tools/types.js';
import { defaultToolLimits } from '../../functions/core/tools/registry.js';
import { FileTooLarge, type ReadOptions, type VersionedFile, WorkspaceFailed, type WriteOptions } from '../../functions/core/workspace/types.js';
import { MemoryWorkspace } from '../support/memory.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A memory workspace that records the options of every write. */
class RecordingWorkspace extends MemoryWorkspace {
  readonly writeOptions: WriteOptions[] = [];

  override async write(path: string, content: Uint8Array, options: WriteOptions = {}): Promise<void> {
    this.writeOptions.push(options);
    return super.write(path, content, options);
  }
}

/** A workspace where another writer changes `a.txt` just before each of the first `times` conditional writes lands. */
async function contested(times: number, change: (n: number) => string): Promise<RecordingWorkspace> {
  const workspace = new RecordingWorkspace();
  await workspace.write('a.txt', encoder.encode('one two three'));
  workspace.writeOptions.length = 0;
  let conflicts = 0;
  let slipping = false;
  workspace.beforeWrite = async (path) => {
    if (slipping || conflicts >= times) return;
    slipping = true;
    conflicts++;
    await workspace.write(path, encoder.encode(change(conflicts)));
    slipping = false;
  };
  return workspace;
}

function ctx(workspace: MemoryWorkspace, toolUseId?: string) {
  return { runId: 'run-1', workspace, limits: defaultToolLimits, ...(toolUseId !== undefined ? { toolUseId } : {}) };
}

const edit = { path: 'a.txt', old_string: 'two', new_string: '2' };

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('edit_file under concurrent writes', () => {
  it('reads the file again after another write came between its read and its write, and edits the new text', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const workspace = await contested(1, () => 'zero one two three');
    expect(await editFile.run(edit, ctx(workspace, 'toolu_1'))).toBe('Edited a.txt: replaced 1 occurrence.');
    expect(decoder.decode(await workspace.read('a.txt'))).toBe('zero one 2 three');
    expect(workspace.writeOptions).toEqual([
      { ifVersion: 'v1', writtenBy: 'toolu_1' },
      {},
      { ifVersion: 'v2', writtenBy: 'toolu_1' },
    ]);
  });

  it(`gives up after ${editAttempts} conflicting writes, pausing with jittered backoff of 25 ms · 2^attempt up to 1 s between them`, async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const workspace = await contested(Infinity, (n) => `${'x'.repeat(n)} one two three`);
    const started = Date.now();
    let elapsed = 0;
    const outcome = editFile.run(edit, ctx(workspace, 'toolu_1')).then(
      () => 'done',
      (error: unknown) => {
        elapsed = Date.now() - started;
        return error;
      },
    );
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await outcome).toEqual(
      new ToolFailure('"a.txt" kept changing while it was edited (10 attempts); read it again and retry the edit.'),
    );
    expect(workspace.writeOptions.filter((o) => o.ifVersion !== undefined)).toHaveLength(editAttempts);
    // Half of 50, 100, 200, 400, 800, then half of the 1 s cap for the last five attempts.
    expect(elapsed).toBe(25 + 50 + 100 + 200 + 400 + 5 * 500);
  });

  it('passes on a failure of the store other than a conflict, without retrying', async () => {
    const workspace = new RecordingWorkspace();
    await workspace.write('a.txt', encoder.encode('one two three'));
    const failure = new WorkspaceFailed('Access denied.');
    workspace.beforeWrite = () => {
      throw failure;
    };
    await expect(editFile.run(edit, ctx(workspace, 'toolu_1'))).rejects.toBe(failure);
    expect(workspace.writeOptions).toHaveLength(2);
  });
});

describe('edit_file without a tool use id', () => {
  it('edits a file no call has claimed, and records no writer', async () => {
    const workspace = new RecordingWorkspace();
    await workspace.write('a.txt', encoder.encode('one two three'));
    expect(await editFile.run(edit, ctx(workspace))).toBe('Edited a.txt: replaced 1 occurrence.');
    expect(decoder.decode(await workspace.read('a.txt'))).toBe('one 2 three');
    expect(workspace.writeOptions).toStrictEqual([{}, { ifVersion: 'v1' }]);
  });
});

describe('read_file on workspace errors', () => {
  class FailingWorkspace extends MemoryWorkspace {
    constructor(private readonly failure: Error) {
      super();
    }

    override async readVersioned(_path: string, _options?: ReadOptions): Promise<VersionedFile | undefined> {
      throw this.failure;
    }
  }

  it('answers a file over the size limit with a tool error naming the size and the limit', async () => {
    await expect(readFile.run({ path: 'a.txt' }, ctx(new FailingWorkspace(new FileTooLarge('a.txt', 100, 99))))).rejects.toEqual(
      new ToolFailure('"a.txt" is 100 bytes, over the 99-byte limit.'),
    );
    await expect(readFile.run({ path: 'a.txt' }, ctx(new FailingWorkspace(new FileTooLarge('a.txt', 100, 99))))).rejects.toBeInstanceOf(ToolFailure);
  });

  it('passes on any other failure of the store as it is', async () => {
    const failure = new WorkspaceFailed('Access denied.');
    await expect(readFile.run({ path: 'a.txt' }, ctx(new FailingWorkspace(failure)))).rejects.toBe(failure);
  });
});
