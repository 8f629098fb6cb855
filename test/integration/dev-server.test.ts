import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withDevServer } from '../support/dev-server.js';

describe('npm run dev', () => {
  it('starts on Node 20 without the AWS SDK warning that its later releases need Node 22, and prints no EMF metrics', async () => {
    const { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: _set, ...env } = process.env;
    const { stdout, stderr } = await withDevServer(env, /listening on (http:\/\/\S+)/, async (url) => {
      // A run makes the handlers build their SDK clients.
      const res = await fetch(`${url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal: 'Multiply.', mode: 'single' }) });
      expect(res.status).toBe(202);
      const { runId } = (await res.json()) as { runId: string };
      for (let i = 0; i < 200; i++) {
        const run = (await (await fetch(`${url}/runs/${runId}`)).json()) as { status: string };
        if (run.status !== 'running') break;
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    expect(stderr).not.toContain('NodeVersionSupportWarning');
    // Locally no CloudWatch reads the functions' EMF metrics: they stay off, whatever the stack
    // imports before it sets the functions' environment.
    expect(stdout).not.toContain('"_aws"');
  }, 60_000);

  it('runs an agent of STEPWISE_AGENTS (a file) by name, its steps following the definition the run recorded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-agents-'));
    const file = join(dir, 'agents.json');
    writeFileSync(file, JSON.stringify([{ name: 'calc', description: 'Works arithmetic.', instructions: 'Use the calculator, then save the answer.', tools: ['calculator', 'write_file'] }]));
    try {
      await withDevServer({ ...process.env, STEPWISE_AGENTS: `@${file}` }, /listening on (http:\/\/\S+)/, async (url) => {
        const res = await fetch(`${url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal: 'Multiply.', agent: 'calc' }) });
        expect(res.status).toBe(202);
        const { runId } = (await res.json()) as { runId: string };
        let run: { status?: string; agent?: { name: string }; result?: unknown } = {};
        for (let i = 0; i < 400 && (run.status === undefined || run.status === 'running'); i++) {
          if (i) await new Promise((r) => setTimeout(r, 50));
          run = (await (await fetch(`${url}/runs/${runId}`)).json()) as typeof run;
        }
        expect(run).toMatchObject({ status: 'succeeded', agent: { name: 'calc' }, result: { response: '1234 × 5678 = 7,006,652. I saved it to answer.md.' } });
        // A name the deployment does not define is refused, naming the ones it does.
        const unknown = await fetch(`${url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal: 'Go.', agent: 'nobody' }) });
        expect(unknown.status).toBe(400);
        expect(await unknown.text()).toContain('calc');
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
