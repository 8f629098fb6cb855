import { describe, expect, it } from 'vitest';
import { consoleIsCurrent } from '../../console/build.js';
import { consoleCsp } from '../../console/csp.js';
import { withDevServer } from '../support/dev-server.js';

describe('npm run dev', () => {
  it('serves the console at /console/, built from its current sources without a build step', async () => {
    await withDevServer(process.env, /The console: (http:\/\/\S+)/, async (url) => {
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
    });
  }, 60_000);
});
