/**
 * What a newcomer sees when `npm run dev` cannot start: a second one on the same data folder, a
 * port in use, or an agent definition it cannot run, gets one line saying what to do and a
 * non-zero exit, not a stack trace.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DataDirInUse, lockDataDir, lockFileName } from '../../local/stand-ins/data-lock.js';
import { type Emulators, startEmulators } from '../../local/stand-ins/emulators.js';

const folders: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-dev-'));
  folders.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs `bin/dev.ts` until it exits on its own (or is killed after `timeoutMs`). */
function dev(env: Record<string, string>, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return script(['bin/dev.ts'], env, timeoutMs);
}

/** Runs a script of `bin/` with arguments until it exits on its own (or is killed after `timeoutMs`). */
function script(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
      env: { ...process.env, STEPWISE_PROVIDER: 'scripted', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('the data folder lock', () => {
  it('refuses a second taker while the first holds the folder, naming the holder, and frees it on release', () => {
    const dir = folder();
    const first = lockDataDir(dir);
    expect(() => lockDataDir(dir)).toThrow(DataDirInUse);
    expect(() => lockDataDir(dir)).toThrow(expect.objectContaining({ dataDir: dir, pid: process.pid }));
    first.release();
    lockDataDir(dir).release();
  });

  it('takes over a folder whose holder is gone', async () => {
    const dir = folder();
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => gone.on('exit', resolve));
    writeFileSync(join(dir, lockFileName), `${gone.pid}\n`);
    const lock = lockDataDir(dir);
    expect(readFileSync(join(dir, lockFileName), 'utf8')).toBe(`${process.pid}\n`);
    lock.release();
  });

  it('keeps two emulator sets off one folder, before either starts anything', async () => {
    const dir = folder();
    const emulators: Emulators = await startEmulators({ dataDir: dir });
    try {
      expect(() => startEmulators({ dataDir: dir })).toThrow(DataDirInUse);
    } finally {
      await emulators.stop();
    }
    // Stopped, the folder is free again.
    await (await startEmulators({ dataDir: dir })).stop();
  });
});

describe('npm run dev, when it cannot start', () => {
  it('says in one line that another process uses the data folder, and exits non-zero', async () => {
    const dir = folder();
    const emulators = await startEmulators({ dataDir: dir });
    try {
      const { code, stdout, stderr } = await dev({ PORT: '0', STEPWISE_DATA_DIR: dir });
      expect({ code, stdout, stderr }).toEqual({
        code: 1,
        stdout: '',
        stderr: `The data folder ${dir} is in use by another Stepwise process (pid ${process.pid}), e.g. another npm run dev: stop it, or set STEPWISE_DATA_DIR to another folder.\n`,
      });
    } finally {
      await emulators.stop();
    }
  });

  it('says in one line that the port is in use, and exits non-zero', async () => {
    const busy: Server = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const { port } = busy.address() as { port: number };
    try {
      const { code, stdout, stderr } = await dev({ PORT: String(port), STEPWISE_DATA_DIR: folder() });
      expect({ code, stdout, stderr }).toEqual({
        code: 1,
        stdout: '',
        stderr: `Port ${port} is in use: stop the other process, or set PORT to another port.\n`,
      });
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });
});

describe('npm run dev, with agents of its own', () => {
  const triage = { name: 'triage', description: 'Sorts issues by urgency.', instructions: 'Sort the issues by urgency.' };

  it('says in one line which definition names a tool this machine does not have, and exits non-zero', async () => {
    const { code, stdout, stderr } = await dev({
      PORT: '0',
      STEPWISE_DATA_DIR: folder(),
      STEPWISE_AGENTS: JSON.stringify([{ ...triage, tools: ['calculator', 'nope'] }]),
    });
    expect({ code, stdout, stderr }).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Stepwise agents: agent "triage": tools[1] "nope" is not a tool of this deployment (it has calculator, read_file, write_file, list_files, edit_file, and agent:<name>)\n',
    });
  }, 60_000);

  it('says so of agents that call each other in a cycle, and of a file it cannot read', async () => {
    const cycle = await dev({
      PORT: '0',
      STEPWISE_DATA_DIR: folder(),
      STEPWISE_AGENTS: JSON.stringify([
        { ...triage, tools: ['agent:review'] },
        { ...triage, name: 'review', tools: ['agent:triage'] },
      ]),
    });
    expect(cycle).toEqual({ code: 1, stdout: '', stderr: 'Stepwise agents: agents "triage" → "review" → "triage" call each other in a cycle\n' });
    const missing = join(folder(), 'agents.json');
    const unread = await dev({ PORT: '0', STEPWISE_DATA_DIR: folder(), STEPWISE_AGENTS: `@${missing}` });
    expect(unread).toEqual({
      code: 1,
      stdout: '',
      stderr: `Stepwise is misconfigured: STEPWISE_AGENTS: cannot read ${missing}: ENOENT: no such file or directory, open '${missing}'\n`,
    });
  }, 90_000);
});

describe('npm start, on the data folder npm run dev uses', () => {
  it('takes the folder from STEPWISE_DATA_DIR, and says in one line that another process uses it', async () => {
    const dir = folder();
    const emulators = await startEmulators({ dataDir: dir });
    try {
      const { code, stdout, stderr } = await script(['bin/run-once.ts', '--script', 'local/scripts/calculator.json', 'Multiply'], {
        STEPWISE_DATA_DIR: dir,
      });
      expect({ code, stdout, stderr }).toEqual({
        code: 1,
        stdout: '',
        stderr: `The data folder ${dir} is in use by another Stepwise process (pid ${process.pid}), e.g. another npm run dev: stop it, or set STEPWISE_DATA_DIR to another folder.\n`,
      });
    } finally {
      await emulators.stop();
    }
  });
});
