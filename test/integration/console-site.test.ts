import { describe, expect, it } from 'vitest';
import { buildConsole, cacheControlOf } from '../../console/build.js';
import { consoleCsp } from '../../console/csp.js';
import { basicCapabilities, capabilitiesOf } from '../../console/src/capabilities.js';
import { parseConfig } from '../../console/src/config.js';
import { checkToolInput } from '../../console/src/validate.js';
import { type ApiDeps, createApi } from '../../functions/api/app.js';
import { consoleRoutes } from '../../local/console.js';

const build = buildConsole();
const config = { auth: 'local' as const, tools: ['write_file'], gatedTools: [] };
const site = consoleRoutes(config, () => build.files);

describe('the console build', () => {
  it('loads hashed assets from its own origin, with no inline script or style', () => {
    const index = new TextDecoder().decode(build.files.find((f) => f.path === 'index.html')?.bytes);
    const urls = [...index.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
    const assets = urls.filter((url) => url.startsWith('/console/assets/'));
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const url of assets) {
      expect(url).toMatch(/^\/console\/assets\/[\w-]+-[A-Z0-9]{8}\.(js|css)$/);
      expect(build.files.some((f) => `/console/${f.path}` === url)).toBe(true);
    }
    expect(urls.filter((url) => !assets.includes(url))).toEqual(['data:,']);
    expect(index).not.toMatch(/<script>|<style|\sstyle=|\son\w+=/i);
    expect(build.files.filter((f) => f.path.startsWith('assets/')).every((f) => f.cache === 'immutable')).toBe(true);
    expect(build.inputs).toEqual(expect.arrayContaining(['console/src/main.tsx', 'console/src/styles.css', 'console/build.ts']));
  });
});

describe('the console on the local server', () => {
  it('serves its page with the CSP, under any console path, and never caches the page', async () => {
    for (const path of ['/console/', '/console/runs/abc', '/console/review']) {
      const res = await site.request(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('content-security-policy')).toBe(consoleCsp());
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await res.text()).toContain('<div id="app"></div>');
    }
    expect((await site.request('/console')).headers.get('location')).toBe('/console/');
  });

  it('serves hashed assets as immutable, and a missing asset as 404', async () => {
    const asset = build.files.find((f) => f.path.endsWith('.js') && f.path.startsWith('assets/main-'));
    const res = await site.request(`/console/${asset?.path}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await site.request('/console/assets/main-NOTTHERE.js')).status).toBe(404);
  });

  it('answers config.json with the local settings', async () => {
    const res = await site.request('/console/config.json');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(parseConfig(await res.json())).toEqual(config);
  });

  it('has a strict policy: scripts and styles from its origin only, no framing, Trusted Types for HTML', () => {
    expect(consoleCsp({ connect: ['https://auth.example.com'] })).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' https://auth.example.com; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; trusted-types stepwise-markdown; require-trusted-types-for 'script'",
    );
    expect(cacheControlOf({ cache: 'no-cache' })).toBe('no-cache');
  });
});

describe('the console’s reading of the API', () => {
  it('finds what the current API takes in its OpenAPI document', async () => {
    const app = createApi({} as ApiDeps);
    const doc = (await (await app.request('/openapi.json')).json()) as Parameters<typeof capabilitiesOf>[0];
    const caps = capabilitiesOf(doc);
    // Each is true exactly when the route's body schema names the field.
    const decision = JSON.stringify(doc.paths?.['/runs/{runId}/approvals/{toolUseId}']);
    expect(caps.decisionInput).toBe(decision.includes('"input"'));
    expect(caps.decisionMessage).toBe(decision.includes('"message"'));
    expect(capabilitiesOf({})).toEqual(basicCapabilities);
  });

  it('checks an edited input against the tool’s own schema before it is sent', () => {
    expect(checkToolInput('write_file', '{"path":"a.md","content":"x"}')).toEqual({ ok: true, value: { path: 'a.md', content: 'x' } });
    expect(checkToolInput('write_file', '{"path":"a.md"')).toMatchObject({ ok: false, problems: [expect.stringMatching(/^Not valid JSON/)] });
    expect(checkToolInput('write_file', '[1]')).toEqual({ ok: false, problems: ['The input must be a JSON object.'] });
    expect(checkToolInput('write_file', '{"path":"a.md"}')).toMatchObject({ ok: false, problems: [expect.stringMatching(/^content: /)] });
    expect(checkToolInput('docs__search', '{"q":1}')).toEqual({ ok: true, value: { q: 1 } });
  });
});
