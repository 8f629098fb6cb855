/**
 * Signing in to the console with OpenID Connect (as deployed with JWT auth), in a real headless
 * Chromium: the console sends the browser to the provider with a PKCE challenge, trades the code
 * for a token with its verifier, and calls the API with that token. The provider is a small one in
 * this test, on the console's origin, issuing the local issuer's tokens, which the local API takes.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleConfig } from '../../console/src/config.js';
import { consoleRoutes } from '../../local/console.js';
import { say } from '../support/agents.js';
import { useBrowser } from '../support/browser.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();
const browser = useBrowser();

interface Site {
  url: string;
  authorizeRequests: URLSearchParams[];
  tokenRequests: URLSearchParams[];
  close(): Promise<void>;
}
const site = {} as Site;

/** The console with OIDC settings, a provider at /oidc/, and everything else passed to the local API. */
beforeAll(async () => {
  const codes = new Map<string, { challenge: string; redirectUri: string }>();
  site.authorizeRequests = [];
  site.tokenRequests = [];
  const app = new Hono();
  let origin = '';
  const config = (): ConsoleConfig => ({
    auth: 'oidc',
    oidc: {
      issuer: `${origin}/oidc`,
      clientId: 'console-client',
      scope: 'openid stepwise/approve',
      authorizationEndpoint: `${origin}/oidc/authorize`,
      tokenEndpoint: `${origin}/oidc/token`,
    },
    tools: ['write_file'],
    gatedTools: [],
  });
  app.all('/console/*', (c) => consoleRoutes(config()).fetch(c.req.raw));
  app.get('/oidc/authorize', (c) => {
    const query = new URL(c.req.url).searchParams;
    site.authorizeRequests.push(query);
    const code = randomUUID();
    codes.set(code, { challenge: query.get('code_challenge') ?? '', redirectUri: query.get('redirect_uri') ?? '' });
    return c.redirect(`${query.get('redirect_uri')}?code=${code}&state=${encodeURIComponent(query.get('state') ?? '')}`, 302);
  });
  app.post('/oidc/token', async (c) => {
    const form = new URLSearchParams(await c.req.text());
    site.tokenRequests.push(form);
    const issued = codes.get(form.get('code') ?? '');
    codes.delete(form.get('code') ?? '');
    const verifier = form.get('code_verifier') ?? '';
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    if (!issued || issued.challenge !== challenge || issued.redirectUri !== form.get('redirect_uri')) {
      return c.json({ error: 'invalid_grant' }, 400);
    }
    const token = await local.stack.issuer.issue({ sub: 'dana', scopes: ['approve'] });
    return c.json({ access_token: token, token_type: 'Bearer', expires_in: 3600 });
  });
  app.all('*', async (c) => {
    const url = new URL(c.req.url);
    const body = ['GET', 'HEAD'].includes(c.req.method) ? undefined : await c.req.arrayBuffer();
    const res = await fetch(`${local.stack.url}${url.pathname}${url.search}`, { method: c.req.method, headers: c.req.raw.headers, ...(body ? { body } : {}) });
    return new Response(await res.arrayBuffer(), { status: res.status, headers: res.headers });
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  site.url = origin;
  site.close = () => new Promise((resolve) => server.close(() => resolve()));
});
afterAll(() => site.close?.());

describe('signing in to the console with OpenID Connect', () => {
  it('signs in by authorization code with PKCE, then calls the API as the signed-in user', async () => {
    const { page, problems } = await browser.open();
    await page.goto(`${site.url}/console/runs/anything`);
    // Not signed in: every page is the sign-in page.
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Signed in as dana').waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/');

    const [authorize] = site.authorizeRequests;
    expect(Object.fromEntries(authorize ?? [])).toMatchObject({
      client_id: 'console-client',
      redirect_uri: `${site.url}/console/callback`,
      response_type: 'code',
      scope: 'openid stepwise/approve',
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      state: expect.any(String),
    });
    expect(Object.fromEntries(site.tokenRequests[0] ?? [])).toMatchObject({
      grant_type: 'authorization_code',
      client_id: 'console-client',
      code_verifier: expect.stringMatching(/^[\w-]{43,128}$/),
    });

    // The API sees the user: the run is theirs.
    const tag = local.book.add('oidc', { turn: say('Signed-in answer.') });
    await page.getByLabel('Goal', { exact: true }).fill(`Answer as Dana\n${tag}`);
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('region', { name: 'Answer', exact: true }).getByText('Signed-in answer.').waitFor();
    const runId = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1) ?? '');
    const token = await local.stack.issuer.issue({ sub: 'dana' });
    expect(((await local.request('GET', `/runs/${runId}`, { token })).body as { owner?: unknown }).owner).toEqual({ principal: 'stepwise-local#dana' });
    expect(problems).toEqual([]);
  });

  it('refuses a callback that this tab did not start', async () => {
    const { page } = await browser.open();
    await page.goto(`${site.url}/console/callback?code=stolen&state=forged`);
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    await page.getByRole('alert').getByText('No sign-in was under way in this tab; sign in again.').waitFor();
    expect(site.tokenRequests.some((form) => form.get('code') === 'stolen')).toBe(false);
  });
});
