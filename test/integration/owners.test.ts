/**
 * Callers and owners through the local stack, with real tokens of the local issuer: nobody sees,
 * cancels or decides what is not theirs.
 */
import { request as httpRequest } from 'node:http';
import { SignJWT, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import type { RunView } from '../../functions/api/schemas.js';
import { localAudience, localIssuer } from '../../local/issuer.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();
const token = (sub: string, tenant: string, scopes: ('approve' | 'admin')[] = []) => local.stack.issuer.issue({ sub, tenant, scopes });

/** Waits until the run stops running, read as the caller the token names. */
async function finished(runId: string, token: string): Promise<RunView> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await local.request('GET', `/runs/${runId}`, { token });
    if (res.status !== 200) throw new Error(`GET /runs/${runId} answered ${res.status}.`);
    if (res.body.status !== 'running') return res.body as unknown as RunView;
    if (Date.now() > deadline) throw new Error(`Run ${runId} is still running.`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('callers and owners, with the local issuer\'s tokens', () => {
  it("answers bob 404 on every route of alice's run, lets a reviewer of her tenant decide, and records who did", async () => {
    const [alice, bob, rita, other] = await Promise.all([
      token('alice', 'acme'),
      token('bob', 'acme'),
      token('rita', 'acme', ['approve']),
      token('rita', 'globex', ['approve']),
    ]);
    const tag = local.book.add('alice-gated', { turn: use(['toolu_w', 'write_file', { path: 'a.md', content: 'A' }]) }, { turn: say('Done.') });
    const started = await local.request('POST', '/runs', { token: alice, body: { goal: `${tag} Write a.md.`, mode: 'single', approvals: { tools: ['write_file'] } } });
    expect(started.status).toBe(202);
    const runId = String(started.body.runId);
    const waiting = await local.waitingOn(runId, 1, { token: alice });
    expect(waiting.owner).toEqual({ principal: `${localIssuer}#alice`, tenant: 'acme' });

    const routes: [string, string, unknown][] = [
      ['GET', `/runs/${runId}`, undefined],
      ['GET', `/runs/${runId}/messages`, undefined],
      ['GET', `/runs/${runId}/files`, undefined],
      ['GET', `/runs/${runId}/files/a.md`, undefined],
      ['POST', `/runs/${runId}/cancel`, undefined],
      ['POST', `/runs/${runId}/approvals/toolu_w`, { decision: 'approve' }],
      ['POST', `/runs/${runId}/fork`, { fromSeq: 0 }],
      // A client run id that is alice's run: answered as a missing run, not "taken" (409).
      ['POST', '/agui', { threadId: 't', runId, messages: [{ id: 'm', role: 'user', content: 'Hi.' }], tools: [], context: [], state: {} }],
    ];
    for (const [method, path, body] of routes) {
      for (const stranger of [bob, other]) {
        const res = await local.request(method, path, { token: stranger, ...(body ? { body } : {}) });
        expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 404, body: { error: { code: 'RunNotFound', message: `No run ${runId}.` } } });
      }
    }
    const bobsList = await local.request('GET', '/runs', { token: bob });
    expect((bobsList.body.items as { runId: string }[]).map((r) => r.runId)).not.toContain(runId);
    const alicesList = await local.request('GET', '/runs', { token: alice });
    expect((alicesList.body.items as { runId: string; waitingFor: number }[]).find((r) => r.runId === runId)?.waitingFor).toBe(1);

    // The owner has no approve role: refused, and the call still waits.
    const refused = await local.request('POST', `/runs/${runId}/approvals/toolu_w`, { token: alice, body: { decision: 'approve' } });
    expect(refused.status).toBe(403);
    expect((await local.waitingOn(runId, 1, { token: alice })).waitingFor).toHaveLength(1);

    const decided = await local.request('POST', `/runs/${runId}/approvals/toolu_w`, { token: rita, body: { decision: 'approve' } });
    expect(decided.body.decidedBy).toBe(`${localIssuer}#rita`);
    expect((await finished(runId, alice)).status).toBe('succeeded');
    const view = (await local.request('GET', `/runs/${runId}`, { token: alice })).body as unknown as RunView;
    expect(view.decisions).toEqual([{ toolUseId: 'toolu_w', name: 'write_file', decision: 'approve', decidedAt: expect.any(String), decidedBy: `${localIssuer}#rita` }]);
  });

  it("gives alice and bob two conversations for one sessionId: bob's model never sees alice's text", async () => {
    const [alice, bob] = await Promise.all([token('alice', 'acme'), token('bob', 'acme')]);
    const aliceTag = local.book.add('alice-session', { turn: say('Noted.') });
    const bobTag = local.book.add('bob-session', { turn: say('Hello Bob.') });
    const first = await local.request('POST', '/runs', { token: alice, body: { goal: `${aliceTag} My secret is PAPAYA.`, mode: 'single', sessionId: 'chat' } });
    await finished(String(first.body.runId), alice);
    const second = await local.request('POST', '/runs', { token: bob, body: { goal: `${bobTag} Hi.`, mode: 'single', sessionId: 'chat' } });
    expect(second.status).toBe(202);
    await finished(String(second.body.runId), bob);
    const bobsRequest = JSON.stringify(local.book.requests.get('bob-session')?.[0]?.messages);
    expect(bobsRequest).toContain('Hi.');
    expect(bobsRequest).not.toContain('PAPAYA');
  });

  it('refuses expired, wrongly signed and other-audience tokens with 401, and writes nothing', async () => {
    const expired = await local.stack.issuer.issue({ sub: 'alice' }, { ttlSeconds: 1 });
    const otherAudience = await local.stack.issuer.issue({ sub: 'alice' }, { audience: 'someone-else' });
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ scope: 'stepwise/admin' })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer(localIssuer)
      .setAudience(localAudience)
      .setSubject('mallory')
      .setExpirationTime('1h')
      .sign(privateKey);
    await new Promise((r) => setTimeout(r, 2100));
    for (const bad of [expired, otherAudience, forged, 'not-a-jwt']) {
      const res = await local.request('POST', '/runs', { token: bad, body: { goal: 'Hi.', mode: 'single' } });
      expect({ status: res.status, code: (res.body.error as { code: string }).code }).toEqual({ status: 401, code: 'Unauthenticated' });
    }
    const list = await local.request('GET', '/runs', { token: await token('mallory', 'acme') });
    expect(list.body.items).toEqual([]);
  });

  it('hands out tokens at POST /_local/tokens, and refuses a bad request for one', async () => {
    const issued = await local.post('/_local/tokens', { sub: 'dora', tenant: 'acme', scopes: ['admin'] });
    expect(issued.status).toBe(200);
    const mine = await local.request('GET', '/runs?scope=tenant', { token: String(issued.body.token) });
    expect(mine.status).toBe(200);
    expect((await local.post('/_local/tokens', { sub: '', scopes: ['root'] })).status).toBe(400);
  });

  it('makes an event-started run its source\'s, hidden from other callers', async () => {
    const tag = local.book.add('event-run', { turn: say('From an event.') });
    await local.post('/_local/events', { Source: 'app.billing', DetailType: 'Stepwise Run Requested', Detail: { goal: `${tag} Go.`, mode: 'single', runId: 'billing-1' } });
    const run = await local.waitFor('billing-1');
    expect(run.owner).toEqual({ principal: 'event:000000000000:app.billing' });
    expect((await local.request('GET', '/runs/billing-1', { token: await token('bob', 'acme', ['admin']) })).status).toBe(404);
  });
});


/** A request to the local server with any Host header (fetch would send the URL's own). */
function rawRequest(method: string, path: string, headers: Record<string, string>, body = ''): Promise<{ status: number; body: string }> {
  const url = new URL(local.stack.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the local server\'s front check (DNS rebinding, cross-site forms)', () => {
  it('answers only requests for a loopback name: a page on another name that resolves to 127.0.0.1 gets 403', async () => {
    const port = new URL(local.stack.url).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `app.localhost:${port}`]) {
      expect({ host, status: (await rawRequest('GET', '/runs', { host })).status }).toEqual({ host, status: 200 });
    }
    for (const host of [`evil.example:${port}`, 'evil.example', `localhost.evil.example:${port}`]) {
      const res = await rawRequest('GET', '/runs', { host });
      expect({ host, status: res.status, code: (JSON.parse(res.body) as { error: { code: string } }).error.code }).toEqual({ host, status: 403, code: 'Forbidden' });
    }
    expect((await rawRequest('POST', '/runs/run-x/cancel', { host: `evil.example:${port}`, 'content-type': 'application/json' }, '{}')).status).toBe(403);
  });

  it('takes a state change only as JSON: a form post of a cancel gets 415 and reaches no route', async () => {
    const host = new URL(local.stack.url).host;
    for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x', undefined]) {
      const res = await rawRequest('POST', '/runs/no-such-run/cancel', { host, ...(type ? { 'content-type': type } : {}) }, type ? 'a=b' : '');
      expect({ type, status: res.status }).toEqual({ type, status: 415 });
    }
    // As JSON it reaches the route, which answers for the run.
    expect((await rawRequest('POST', '/runs/no-such-run/cancel', { host, 'content-type': 'application/json' }, '{}')).status).toBe(404);
  });
});

describe('long-term memory, with the local issuer\'s tokens', () => {
  /** Starts a one-agent run with owner memory as the token's caller and waits for its end. */
  async function memoryRun(tag: string, token: string, memory: { scope: string } = { scope: 'owner' }): Promise<void> {
    const started = await local.request('POST', '/runs', { token, body: { goal: `${tag} Remember.`, mode: 'single', memory } });
    expect(started.status).toBe(202);
    const ended = await finished(String(started.body.runId), token);
    expect({ status: ended.status, error: ended.error }).toEqual({ status: 'succeeded', error: undefined });
  }
  /** The tool results the model read on its second call of a script (by the name it was added with). */
  const resultsOf = (name: string) => JSON.stringify(local.book.requests.get(name)?.[1]?.messages.at(-1));

  it("keeps an owner's memory for the owner's later runs and routes, and from everyone else", async () => {
    const [alice, aliceElsewhere, bob, rita] = await Promise.all([token('alice', 'acme'), token('alice', 'globex'), token('bob', 'acme'), token('rita', 'acme', ['approve'])]);
    const write = local.book.add(
      'memory-write',
      {
        turn: use(
          ['toolu_m1', 'memory', { command: 'create', path: '/memories/prefs.md', file_text: 'Alice takes her tea black.' }],
          ['toolu_m2', 'memory', { command: 'create', path: '/memories/../workspaces/x.md', file_text: 'escape' }],
          ['toolu_m3', 'memory', { command: 'create', path: '/memories/big.md', file_text: 'x'.repeat(100 * 1024 + 1) }],
        ),
      },
      { turn: say('Noted.') },
    );
    await memoryRun(write, alice);
    const written = resultsOf('memory-write');
    expect(written).toContain('File created successfully at: /memories/prefs.md');
    expect(written).toContain('contains \\"..\\": memory paths must stay inside /memories');
    expect(written).toContain('over the 102400-byte limit of a memory file');

    const view = { turn: use(['toolu_v', 'memory', { command: 'view', path: '/memories/prefs.md' }]) };
    const later = local.book.add('memory-later', view, { turn: say('Black tea.') });
    await memoryRun(later, alice);
    // What memory holds reaches the model marked as untrusted data.
    expect(resultsOf('memory-later')).toMatch(/<untrusted-data-[0-9a-f]+ source=\\"memory\\">\\n.*Alice takes her tea black\./);
    for (const [who, stranger] of [['bob', bob], ['globex', aliceElsewhere]] as const) {
      const tag = local.book.add(`memory-${who}`, view, { turn: say('Nothing.') });
      await memoryRun(tag, stranger);
      expect(resultsOf(`memory-${who}`)).toContain('The path /memories/prefs.md does not exist');
      expect(resultsOf(`memory-${who}`)).not.toContain('tea');
    }

    const listed = await local.request('GET', '/memories', { token: alice });
    expect(listed).toEqual({ status: 200, body: { items: [{ path: '/memories/prefs.md', size: 26, updatedAt: expect.any(String) }] } });
    const text = await fetch(`${local.stack.url}/memories/prefs.md`, { headers: { authorization: `Bearer ${alice}` } });
    expect(await text.text()).toBe('Alice takes her tea black.');
    expect((await local.request('GET', '/memories', { token: bob })).body).toEqual({ items: [] });
    for (const [stranger, query] of [[bob, ''], [aliceElsewhere, ''], [alice, '?scope=tenant']] as const) {
      const res = await local.request('GET', `/memories/prefs.md${query}`, { token: stranger });
      expect({ status: res.status, code: (res.body.error as { code: string }).code }).toEqual({ status: 404, code: 'MemoryNotFound' });
      expect((await local.request('DELETE', `/memories/prefs.md${query}`, { token: stranger })).status).toBe(404);
    }
    // A reviewer of the tenant sees the tenant's memory (empty here), never alice's own.
    expect(await local.request('GET', '/memories?scope=tenant', { token: rita })).toEqual({ status: 200, body: { items: [] } });
    expect((await local.request('DELETE', '/memories/prefs.md', { token: alice })).status).toBe(204);
    expect((await local.request('GET', '/memories', { token: alice })).body).toEqual({ items: [] });
  });

  it('refuses a tenant memory for a caller without a tenant, and a session memory without a session, naming memory.scope', async () => {
    const noTenant = await local.stack.issuer.issue({ sub: 'carol' });
    for (const [memory, needs] of [[{ scope: 'tenant' }, 'tenant'], [{ scope: 'session' }, 'sessionId']] as const) {
      const res = await local.request('POST', '/runs', { token: noTenant, body: { goal: 'Hi.', mode: 'single', memory } });
      expect(res.status).toBe(400);
      expect((res.body.error as { issues: { path: string; message: string }[] }).issues).toEqual([{ path: 'memory.scope', message: expect.stringContaining(needs) }]);
    }
  });
});
