import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { iamCallers, jwtClaimCallers } from '../../functions/api/callers.js';
import { as, memoryApi } from '../support/api.js';

const goal = 'Write a.md.';
const alice = as('alice', { tenant: 'acme' });
const bob = as('bob', { tenant: 'acme' });
const rita = as('rita', { tenant: 'acme', scopes: ['approve'] });
const root = as('root', { tenant: 'acme', scopes: ['admin'] });
const stranger = as('rita', { tenant: 'globex', scopes: ['admin'] });

/** Every route of one run, as [method, path, body]. */
function routesOf(runId: string): [string, string, unknown][] {
  return [
    ['GET', `/runs/${runId}`, undefined],
    ['GET', `/runs/${runId}/messages`, undefined],
    ['GET', `/runs/${runId}/events`, undefined],
    ['GET', `/runs/${runId}/files`, undefined],
    ['GET', `/runs/${runId}/files/a.md`, undefined],
    ['POST', `/runs/${runId}/cancel`, undefined],
    ['POST', `/runs/${runId}/approvals/toolu_1`, { decision: 'approve' }],
    ['POST', `/runs/${runId}/fork`, { fromSeq: 0 }],
  ];
}

/** A run started by `owner` whose write_file call toolu_1 waits for a decision. */
async function waitingRun(api: ReturnType<typeof memoryApi>, owner: Record<string, string>) {
  const { body } = await api.request('POST', '/runs', { goal, mode: 'single', approvals: { tools: ['write_file'] } }, owner);
  const runId = String(body.runId);
  await api.approvals.open({
    runId,
    toolUseId: 'toolu_1',
    agent: 'single',
    conversationId: `run/${runId}/single`,
    seq: 1,
    name: 'write_file',
    input: { path: 'a.md', content: 'x' },
    requestedAt: '2026-01-01T00:00:00.000Z',
  });
  await api.approvals.attachToken(runId, 'toolu_1', 'token-1');
  return runId;
}

/** Alice's running run whose call toolu_1 waits for a decision, with a file in its workspace. */
async function alicesRun(api: ReturnType<typeof memoryApi>) {
  const runId = await waitingRun(api, alice);
  api.workspace(runId).files.set('a.md', new TextEncoder().encode('hello'));
  return runId;
}

describe('owners', () => {
  it('answers every route of a run to anyone but its owner and its tenant\'s reviewers exactly as for a missing run', async () => {
    const api = memoryApi();
    const runId = await alicesRun(api);
    for (const [method, path, body] of routesOf(runId)) {
      const missing = await api.request(method, path.replace(runId, 'no-such-run'), body, bob);
      const hidden = await api.request(method, path, body, bob);
      expect({ status: hidden.status, code: hidden.body.error?.code }).toEqual({ status: 404, code: 'RunNotFound' });
      expect(JSON.stringify(hidden.body).replace(runId, 'no-such-run')).toBe(JSON.stringify(missing.body));
      expect((await api.request(method, path, body, stranger)).status).toBe(404);
    }
    expect(api.approvals.approvals.get(`${runId}/toolu_1`)?.decision).toBeUndefined();
    expect((await api.request('GET', `/runs/${runId}`, undefined, alice)).body.owner).toEqual({ principal: 'test#alice', tenant: 'acme' });
  });

  it('lets a reviewer read and decide but not cancel, and records who decided', async () => {
    const api = memoryApi();
    const runId = await alicesRun(api);
    expect((await api.request('GET', `/runs/${runId}/files/a.md`, undefined, rita)).status).toBe(200);
    expect((await api.request('POST', `/runs/${runId}/cancel`, undefined, rita)).body.error?.code).toBe('Forbidden');
    const decided = await api.request('POST', `/runs/${runId}/approvals/toolu_1`, { decision: 'approve' }, rita);
    expect(decided).toEqual({
      status: 202,
      body: { runId, toolUseId: 'toolu_1', decision: 'approve', decidedAt: expect.any(String), decidedBy: 'test#rita' },
    });
    const run = await api.request('GET', `/runs/${runId}`, undefined, alice);
    expect(run.body.decisions).toEqual([{ toolUseId: 'toolu_1', name: 'write_file', decision: 'approve', decidedAt: expect.any(String), decidedBy: 'test#rita' }]);
    expect((await api.request('POST', `/runs/${runId}/cancel`, undefined, root)).status).toBe(202);
  });

  it('refuses a decision from a caller without the approve role and leaves the call waiting', async () => {
    const api = memoryApi();
    const runId = await alicesRun(api);
    const refused = await api.request('POST', `/runs/${runId}/approvals/toolu_1`, { decision: 'approve' }, alice);
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 403, code: 'Forbidden' });
    expect(api.approvals.approvals.get(`${runId}/toolu_1`)?.decision).toBeUndefined();
    expect(api.tokens.resumed).toEqual([]);
    const run = await api.request('GET', `/runs/${runId}`, undefined, alice);
    expect((run.body.waitingFor as unknown[]).length).toBe(1);
  });

  it('refuses self-approval when reviewers must be separate', async () => {
    const api = memoryApi({ access: { separateReviewer: true } });
    const reviewerOwner = as('rita', { tenant: 'acme', scopes: ['approve'] });
    const runId = await waitingRun(api, reviewerOwner);
    expect((await api.request('POST', `/runs/${runId}/approvals/toolu_1`, { decision: 'approve' }, reviewerOwner)).status).toBe(403);
    expect((await api.request('POST', `/runs/${runId}/approvals/toolu_1`, { decision: 'approve' }, root)).status).toBe(202);
  });

  it('keeps sessions and idempotency keys per owner', async () => {
    const api = memoryApi();
    const key = { 'idempotency-key': 'same-key' };
    const a = await api.request('POST', '/runs', { goal, mode: 'single', sessionId: 'chat' }, { ...alice, ...key });
    const b = await api.request('POST', '/runs', { goal, mode: 'single', sessionId: 'chat' }, { ...bob, ...key });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(a.body.runId).not.toBe(b.body.runId);
    const [first, second] = api.starter.started;
    expect(first?.conversationId).not.toBe(second?.conversationId);
  });

  it('refuses a client run id another caller took as a missing run (RunNotFound), without telling its status', async () => {
    const api = memoryApi();
    const runId = await alicesRun(api);
    const { createRun } = await import('../../functions/core/intake/create.js');
    await expect(
      createRun({ goal, mode: 'single', maxIterations: 5 }, { runs: api.runs, starter: api.starter, newId: () => 'x' }, {
        caller: { principal: 'test#bob', tenant: 'acme', scopes: [] },
        runId,
      }),
    ).rejects.toThrow(expect.objectContaining({ code: 'RunNotFound', status: 404, message: `No run ${runId}.` }));
  });

  it('limits how many runs one caller may have running', async () => {
    const api = memoryApi({ maxRunningRuns: 2 });
    for (let i = 0; i < 2; i++) expect((await api.request('POST', '/runs', { goal }, alice)).status).toBe(202);
    const third = await api.request('POST', '/runs', { goal }, alice);
    expect({ status: third.status, code: third.body.error?.code }).toEqual({ status: 429, code: 'TooManyRuns' });
    expect((await api.request('POST', '/runs', { goal }, bob)).status).toBe(202);
    const [oldest] = [...api.runs.runs.values()];
    await api.request('POST', `/runs/${oldest?.runId}/cancel`, undefined, alice);
    expect((await api.request('POST', '/runs', { goal }, alice)).status).toBe(202);
  });

  it('answers a malformed or overlong run id with a 400 on every route', async () => {
    const api = memoryApi();
    for (const runId of ['x'.repeat(3000), 'a%20b', 'run.1']) {
      for (const [method, path, body] of routesOf(runId)) {
        const res = await api.request(method, path, body, alice);
        expect({ path: path.slice(0, 40), status: res.status, code: res.body.error?.code }).toEqual({ path: path.slice(0, 40), status: 400, code: 'ValidationFailed' });
      }
    }
  });
});

describe('GET /runs', () => {
  it("lists the caller's runs newest first, filtered by status, in pages", async () => {
    let t = 0;
    const api = memoryApi({ clock: () => new Date(Date.UTC(2026, 0, 1, 0, 0, t++)) });
    for (let i = 0; i < 5; i++) await api.request('POST', '/runs', { goal: `goal ${i} ${'x'.repeat(300)}` }, alice);
    await api.request('POST', '/runs', { goal: 'bob' }, bob);
    await api.request('POST', '/runs/run-2/cancel', undefined, alice);

    const first = await api.request('GET', '/runs?limit=2', undefined, alice);
    expect((first.body.items as { runId: string }[]).map((r) => r.runId)).toEqual(['run-5', 'run-4']);
    const item = (first.body.items as Record<string, unknown>[])[0];
    expect(item).toEqual({
      runId: 'run-5',
      mode: 'multi',
      goal: `goal 4 ${'x'.repeat(193)}`,
      status: 'running',
      phase: 'idle',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      estimatedCostUsd: 0,
      waitingFor: 0,
    });
    const next = await api.request('GET', `/runs?limit=2&cursor=${first.body.nextCursor}`, undefined, alice);
    expect((next.body.items as { runId: string }[]).map((r) => r.runId)).toEqual(['run-3', 'run-2']);
    const cancelled = await api.request('GET', '/runs?status=cancelled', undefined, alice);
    expect((cancelled.body.items as { runId: string }[]).map((r) => r.runId)).toEqual(['run-2']);
    const bobs = await api.request('GET', '/runs', undefined, bob);
    expect((bobs.body.items as { runId: string }[]).map((r) => r.runId)).toEqual(['run-6']);
  });

  it("lists a tenant's runs for reviewers only", async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal }, alice);
    await api.request('POST', '/runs', { goal }, bob);
    await api.request('POST', '/runs', { goal }, stranger);
    expect((await api.request('GET', '/runs?scope=tenant', undefined, alice)).status).toBe(403);
    const all = await api.request('GET', '/runs?scope=tenant', undefined, rita);
    expect((all.body.items as { runId: string }[]).map((r) => r.runId).sort()).toEqual(['run-1', 'run-2']);
  });

  it('counts the calls waiting for a reviewer', async () => {
    const api = memoryApi();
    await alicesRun(api);
    const { body } = await api.request('GET', '/runs', undefined, alice);
    expect((body.items as { waitingFor: number }[])[0]?.waitingFor).toBe(1);
  });
});

describe('who sees what', () => {
  const callers = fc.record({
    sub: fc.constantFrom('alice', 'bob', 'rita'),
    tenant: fc.constantFrom('acme', 'globex', undefined),
    scopes: fc.subarray(['approve', 'admin'] as const),
  });

  it('shows a run to a caller iff it owns it or holds a role in its tenant, on every route', async () => {
    await fc.assert(
      fc.asyncProperty(callers, callers, fc.constantFrom(...routesOf('run-1')), async (owner, caller, [method, path, body]) => {
        const api = memoryApi();
        const ownerAuth = as(owner.sub, { ...(owner.tenant ? { tenant: owner.tenant } : {}), scopes: [...owner.scopes] });
        const callerAuth = as(caller.sub, { ...(caller.tenant ? { tenant: caller.tenant } : {}), scopes: [...caller.scopes] });
        await api.request('POST', '/runs', { goal, mode: 'single' }, ownerAuth);
        const res = await api.request(method, path, body, callerAuth);
        const sees = (owner.sub === caller.sub && owner.tenant === caller.tenant) || (owner.tenant === caller.tenant && caller.scopes.length > 0);
        expect(res.status === 404 && res.body.error?.code === 'RunNotFound').toBe(!sees);
      }),
      { numRuns: 150 },
    );
  });
});

describe('callers as API Gateway passes them', () => {
  const iamEvent = (userArn: string) => ({ event: { requestContext: { authorizer: { iam: { userArn } } } } });
  const jwtEvent = (claims: Record<string, string>) => ({ event: { requestContext: { authorizer: { jwt: { claims } } } } });

  it('reads an IAM caller from the request context, its roles from the ARN patterns', async () => {
    const api = memoryApi({ authenticate: iamCallers({ reviewerArns: ['arn:aws:sts::1:assumed-role/Reviewers'] }) });
    const post = (arn: string) =>
      api.app.request('/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal }) }, iamEvent(arn));
    expect((await post('arn:aws:iam::1:user/ann')).status).toBe(202);
    expect((await api.runs.get('run-1'))?.owner).toEqual({ principal: 'arn:aws:iam::1:user/ann' });
    expect((await api.app.request('/runs/run-1', {}, iamEvent('arn:aws:iam::1:user/ben'))).status).toBe(404);
    expect((await api.app.request('/runs/run-1', {}, iamEvent('arn:aws:sts::1:assumed-role/Reviewers/rita'))).status).toBe(200);
    expect((await api.app.request('/runs/run-1', {})).status).toBe(401);
  });

  it("names an assumed role's caller by the role: a session named after a colleague reaches none of the colleague's runs", async () => {
    const api = memoryApi({ authenticate: iamCallers({}) });
    const start = (arn: string, body: Record<string, unknown>) =>
      api.app.request('/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }, iamEvent(arn));
    expect((await start('arn:aws:sts::1:assumed-role/Alice/alice', { goal, mode: 'single', sessionId: 'notes' })).status).toBe(202);
    expect((await api.runs.get('run-1'))?.owner).toEqual({ principal: 'arn:aws:sts::1:assumed-role/Alice' });
    // Eve may assume a shared role and name her session "alice": she is still that role, not alice.
    const eve = iamEvent('arn:aws:sts::1:assumed-role/Shared/alice');
    expect((await api.app.request('/runs/run-1', {}, eve)).status).toBe(404);
    expect((await start('arn:aws:sts::1:assumed-role/Shared/alice', { goal, mode: 'single', sessionId: 'notes' })).status).toBe(202);
    expect((await api.runs.get('run-2'))?.owner).toEqual({ principal: 'arn:aws:sts::1:assumed-role/Shared' });
  });

  it('reads a JWT caller from the claims API Gateway verified, lists written as "[a b]" included', async () => {
    const api = memoryApi({ authenticate: jwtClaimCallers({ tenantClaim: 'custom:tenant' }) });
    const alice = jwtEvent({ iss: 'https://idp', sub: 'alice', 'custom:tenant': 'acme' });
    const rita = jwtEvent({ iss: 'https://idp', sub: 'rita', 'custom:tenant': 'acme', scp: '[openid stepwise/approve]' });
    await api.app.request('/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal }) }, alice);
    expect((await api.runs.get('run-1'))?.owner).toEqual({ principal: 'https://idp#alice', tenant: 'acme' });
    const listed = await api.app.request('/runs?scope=tenant', {}, rita);
    expect(((await listed.json()) as { items: { runId: string }[] }).items.map((r) => r.runId)).toEqual(['run-1']);
    expect((await api.app.request('/runs?scope=tenant', {}, alice)).status).toBe(403);
  });

  it('refuses a token without the tenant claim where the deployment names one (401), so no shared "no tenant" pool forms', async () => {
    const api = memoryApi({ authenticate: jwtClaimCallers({ tenantClaim: 'custom:tenant' }) });
    const tenantless = jwtEvent({ iss: 'https://idp', sub: 'mallory', scp: '[stepwise/admin]' });
    const answer = await api.app.request('/runs?scope=tenant', {}, tenantless);
    expect({ status: answer.status, body: await answer.json() }).toEqual({
      status: 401,
      body: { error: { code: 'Unauthenticated', message: "The token carries no custom:tenant claim; this deployment needs every caller's tenant." } },
    });
    const started = await api.app.request('/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal }) }, tenantless);
    expect(started.status).toBe(401);
    expect(api.writes()).toBe(0);
  });
});
