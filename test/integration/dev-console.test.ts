import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleIsCurrent } from '../../console/build.js';
import { consoleCsp } from '../../console/csp.js';

describe('npm run dev', () => {
  it('serves the console at /console/, built from its current sources without a build step', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-dev-console-'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/dev.ts'], {
      env: { ...process.env, PORT: '0', STEPWISE_DATA_DIR: dataDir, STEPWISE_PROVIDER: 'scripted', STEPWISE_SCRIPT: 'local/scripts/calculator.json' },
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const console = /The console: (http:\/\/\S+)/.exec(stdout);
          if (console?.[1]) resolve(console[1]);
        });
        child.once('exit', (code) => reject(new Error(`npm run dev exited (${code}): ${stderr}`)));
      });
      expect(url).toMatch(/\/console\/$/);
      expect(consoleIsCurrent()).toBe(true);
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toBe(consoleCsp());
      const script = /<script type="module" src="([^"]+)"/.exec(await page.text())?.[1];
      const asset = await fetch(new URL(script ?? '', url));
      expect(asset.status).toBe(200);
      expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(((await (await fetch(new URL('config.json', url))).json()) as { auth: string }).auth).toBe('local');
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
