/** `npm run dev` as a child process for tests: started on a free port and a fresh data folder, stopped afterwards. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs `bin/dev.ts` until `ready` matches its output, hands the match's first group (a URL) to
 * `use`, then stops it. Returns what it wrote. The model replays the calculator script, or with
 * `model: 'as given'` is whatever `env` makes it (without a key, the offline model).
 */
export async function withDevServer(
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  use: (url: string) => Promise<void>,
  options: { model?: 'calculator script' | 'as given' } = {},
): Promise<{ stdout: string; stderr: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-dev-'));
  const model = options.model === 'as given' ? {} : { STEPWISE_PROVIDER: 'scripted', STEPWISE_SCRIPT: 'local/scripts/calculator.json' };
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/dev.ts'], {
    env: { ...env, PORT: '0', STEPWISE_DATA_DIR: dataDir, ...model },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const found = ready.exec(stdout)?.[1];
        if (found) resolve(found);
      });
      child.once('exit', (code) => reject(new Error(`npm run dev exited (${code}): ${stderr}`)));
    });
    await use(url);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { stdout, stderr };
}
