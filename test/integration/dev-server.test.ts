import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('npm run dev', () => {
  it('starts on Node 20 without the AWS SDK warning that its later releases need Node 22', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-dev-'));
    const { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: _set, ...env } = process.env;
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/dev.ts'], {
      env: { ...env, PORT: '0', STEPWISE_DATA_DIR: dataDir, STEPWISE_PROVIDER: 'scripted', STEPWISE_SCRIPT: 'local/scripts/calculator.json' },
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const listening = /listening on (http:\/\/\S+)/.exec(stdout);
          if (listening?.[1]) resolve(listening[1]);
        });
        child.once('exit', (code) => reject(new Error(`npm run dev exited (${code}): ${stderr}`)));
      });
      // A run makes the handlers build their SDK clients.
      const res = await fetch(`${url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal: 'Multiply.', mode: 'single' }) });
      expect(res.status).toBe(202);
      const { runId } = (await res.json()) as { runId: string };
      for (let i = 0; i < 200; i++) {
        const run = (await (await fetch(`${url}/runs/${runId}`)).json()) as { status: string };
        if (run.status !== 'running') break;
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
    expect(stderr).not.toContain('NodeVersionSupportWarning');
  }, 60_000);
});
