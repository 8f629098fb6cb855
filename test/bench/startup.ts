/**
 * Start-up figures for `npm run bench`: how long `npm run dev` takes until it answers
 * `GET /health` (on a free port and a fresh data folder), and how long the `stepwise` CLI takes
 * to print its help. Printed, not asserted: they depend on the machine and on how warm its disk
 * caches are.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { row } from './table.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** The tsx command line that `npm run dev` runs (`tsx bin/dev.ts`), without npm in front. */
const tsxCli = createRequire(import.meta.url).resolve('tsx/cli');

export interface StartupFigures {
  /** Milliseconds from spawning `tsx bin/dev.ts` to its first 200 on `/health`, one per start. */
  devMs: number[];
  /** Milliseconds of `node bin/stepwise.mjs --help`, one per run. */
  cliMs: number[];
}

/** Starts `npm run dev` `devRuns` times and the CLI `cliRuns` times, one after another. */
export async function measureStartup(devRuns = 3, cliRuns = 5): Promise<StartupFigures> {
  const devMs: number[] = [];
  for (let i = 0; i < devRuns; i++) devMs.push(await timeDevStart());
  const cliMs: number[] = [];
  for (let i = 0; i < cliRuns; i++) cliMs.push(timeCli());
  return { devMs, cliMs };
}

/** The figures as a Markdown section. */
export function startupReport({ devMs, cliMs }: StartupFigures): string {
  return [
    '\n## Start-up\n',
    row(['command', 'median ms', 'runs (ms)']),
    row(['---', '---', '---']),
    row([`npm run dev, until GET /health answers (median of ${devMs.length})`, median(devMs).toFixed(0), devMs.map((ms) => ms.toFixed(0)).join(', ')]),
    row([`stepwise --help (median of ${cliMs.length})`, median(cliMs).toFixed(0), cliMs.map((ms) => ms.toFixed(0)).join(', ')]),
  ].join('\n');
}

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
}

async function timeDevStart(): Promise<number> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-bench-dev-'));
  const started = performance.now();
  // Its own process group, so stopping it stops tsx's child and the S3 emulator's too.
  const child = spawn(process.execPath, [tsxCli, 'bin/dev.ts'], {
    cwd: root,
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, PORT: String(port), STEPWISE_DATA_DIR: dataDir, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    await untilHealthy(`http://127.0.0.1:${port}/health`, exited);
    return performance.now() - started;
  } finally {
    await stop(child, exited);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function timeCli(): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, ['bin/stepwise.mjs', '--help'], { cwd: root, stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`stepwise --help exited with ${result.status}.`);
  return performance.now() - started;
}

async function untilHealthy(url: string, exited: Promise<number | null>): Promise<void> {
  let gone: number | null | undefined;
  void exited.then((code) => (gone = code));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (gone !== undefined) throw new Error(`npm run dev exited with ${gone} before it answered ${url}.`);
    const ok = await fetch(url).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`npm run dev did not answer ${url} within 120 s.`);
}

async function stop(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return;
  const group = -child.pid;
  process.kill(group, 'SIGTERM');
  // A shutdown that hangs must not hang the bench.
  const timer = setTimeout(() => process.kill(group, 'SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** A loopback port nobody listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
