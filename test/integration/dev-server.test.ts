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
});
