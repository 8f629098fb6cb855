import { Validator } from '@seriousme/openapi-schema-validator';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxFileResponseBytes } from '../../functions/api/app.js';
import { retryAfterSeconds } from '../../functions/api/errors.js';
import { OrchestratorUnavailable } from '../../functions/adapters/aws/intake.js';
import { pageBytes } from '../../functions/api/routes/messages.js';
import { localEventRoutes } from '../../local/routes.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { memoryApi } from '../support/api.js';

const goal = 'Write a haiku about queues.';

describe('POST /runs', () => {
  it('accepts a run and starts its orchestrator once', async () => {
    const api = memoryApi();
    const res = await api.request('POST', '/runs', { goal, mode: 'single', maxIterations: 5 });
    expect(res).toEqual({ status: 202, body: { runId: 'run-1', status: 'running', phase: 'idle' } });
    expect(api.starter.started).toEqual([{ runId: 'run-1', mode: 'single', agent: 'single', label: 'single', conversationId: 'run/run-1/single', maxIterations: 5, model: '' }]);
    expect(await api.runs.get('run-1')).toMatchObject({ goal, mode: 'single', status: 'running', phase: 'idle' });
  });

  it('defaults to multi mode and 25 iterations', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal });
    expect(api.starter.started[0]).toMatchObject({ mode: 'multi', maxIterations: 25 });
  });

  it.each([
    ['invalid JSON', '{"goal": ', 'InvalidJson', '(body)'],
    ['a missing goal', { mode: 'single' }, 'ValidationFailed', 'goal'],
    ['an empty goal', { goal: '   ' }, 'ValidationFailed', 'goal'],
    ['a goal over 100,000 characters', { goal: 'x'.repeat(100_001) }, 'ValidationFailed', 'goal'],
    ['an unknown mode', { goal, mode: 'swarm' }, 'ValidationFailed', 'mode'],
    ['maxIterations 0', { goal, maxIterations: 0 }, 'ValidationFailed', 'maxIterations'],
    ['maxIterations 201', { goal, maxIterations: 201 }, 'ValidationFailed', 'maxIterations'],
    ['a fractional maxIterations', { goal, maxIterations: 2.5 }, 'ValidationFailed', 'maxIterations'],
    ['an unknown field', { goal, temperature: 2 }, 'ValidationFailed', '(body)'],
    ['a session on a multi run', { goal, mode: 'multi', sessionId: 's1' }, 'ValidationFailed', 'sessionId'],
    ['a bad session id', { goal, mode: 'single', sessionId: '../etc' }, 'ValidationFailed', 'sessionId'],
    ['a body that is not an object', [goal], 'ValidationFailed', '(body)'],
  ])('refuses %s with a 400 naming the field, and writes nothing', async (_name, body, code, path) => {
    const api = memoryApi();
    const res = await api.request('POST', '/runs', body);
    expect(res.status).toBe(400);
    expect(res.body.error?.code).toBe(code);
    expect(res.body.error?.issues?.map((i) => i.path)).toContain(path);
    expect(api.writes()).toBe(0);
  });

  it('names every bad field at once', async () => {
    const res = await memoryApi().request('POST', '/runs', { goal: '', mode: 'x', maxIterations: -1 });
    expect(res.body.error?.issues?.map((i) => i.path).sort()).toEqual(['goal', 'maxIterations', 'mode']);
  });

  it('refuses a body that is not JSON by content type', async () => {
    const api = memoryApi();
    const res = await api.request('POST', '/runs', goal, { 'content-type': 'text/plain' });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'UnsupportedMediaType', issues: [{ path: 'Content-Type' }] } } });
    expect(api.writes()).toBe(0);
  });

  it('answers the same Idempotency-Key and body with the same run, starting nothing new', async () => {
    const api = memoryApi();
    const headers = { 'idempotency-key': 'key-1' };
    const first = await api.request('POST', '/runs', { goal, mode: 'single' }, headers);
    // Key order and defaults do not make a body different.
    const again = await api.request('POST', '/runs', { mode: 'single', goal, maxIterations: 25 }, headers);
    expect(again).toEqual(first);
    expect(api.starter.started).toHaveLength(1);
  });

  it('refuses the same Idempotency-Key with another body with 409', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal }, { 'idempotency-key': 'key-1' });
    const res = await api.request('POST', '/runs', { goal: 'something else' }, { 'idempotency-key': 'key-1' });
    expect(res).toMatchObject({ status: 409, body: { error: { code: 'IdempotencyConflict' } } });
    expect(api.starter.started).toHaveLength(1);
  });

  it('refuses an invalid Idempotency-Key', async () => {
    const api = memoryApi();
    const res = await api.request('POST', '/runs', { goal }, { 'idempotency-key': 'x'.repeat(300) });
    expect(res).toMatchObject({ status: 400, body: { error: { issues: [{ path: 'Idempotency-Key' }] } } });
    expect(api.writes()).toBe(0);
  });

  it('continues a session in its conversation, and refuses a second run while the first runs', async () => {
    const api = memoryApi();
    const first = await api.request('POST', '/runs', { goal, mode: 'single', sessionId: 'chat-1' });
    expect(api.starter.started[0]?.conversationId).toBe(conversationIdOf('run-1', 'single', 'chat-1', { principal: 'local' }));
    const busy = await api.request('POST', '/runs', { goal: 'and another', mode: 'single', sessionId: 'chat-1' });
    expect(busy).toMatchObject({ status: 409, body: { error: { code: 'SessionBusy' } } });
    expect(api.runs.runs.size).toBe(1);

    await api.runs.finish(String(first.body.runId), { status: 'succeeded', phase: 'complete' });
    const next = await api.request('POST', '/runs', { goal: 'and another', mode: 'single', sessionId: 'chat-1' });
    expect(next.status).toBe(202);
    // Sessions are per owner: the conversation is named after the caller (here the local one) and the session.
    expect(api.starter.started[1]?.conversationId).toBe(conversationIdOf('run-2', 'single', 'chat-1', { principal: 'local' }));
  });

  it('answers 202 or 400, never 500, for any body, and writes nothing on a 400', async () => {
    const field = fc.oneof(fc.anything(), fc.string(), fc.integer(), fc.constantFrom('single', 'multi', '', 'x'.repeat(10)));
    const body = fc.oneof(
      fc.anything(),
      fc.record({ goal: field, mode: field, sessionId: field, maxIterations: field, model: field }, { requiredKeys: [] }),
      fc.record({ goal: fc.string({ minLength: 1, maxLength: 50 }), mode: fc.constantFrom('single', 'multi'), maxIterations: fc.integer({ min: -5, max: 300 }) }),
      fc.string().map((s) => `{${s}`),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const api = memoryApi();
        const res = await api.request('POST', '/runs', typeof b === 'string' ? b : JSON.stringify(b ?? null));
        expect([202, 400]).toContain(res.status);
        if (res.status === 400) {
          expect(res.body.error?.code).toMatch(/^(InvalidJson|ValidationFailed)$/);
          expect(api.writes()).toBe(0);
        } else {
          expect(api.starter.started).toHaveLength(1);
        }
      }),
      { numRuns: 600 },
    );
  });
});

describe('the run routes', () => {
  it('answers 404 for an unknown run on every run route', async () => {
    const api = memoryApi();
    for (const [method, path] of [
      ['GET', '/runs/nope'],
      ['GET', '/runs/nope/messages'],
      ['GET', '/runs/nope/files'],
      ['GET', '/runs/nope/files/a.txt'],
      ['POST', '/runs/nope/cancel'],
      ['POST', '/runs/nope/approvals/toolu_1'],
    ] as const) {
      expect(await api.request(method, path)).toMatchObject({ status: 404, body: { error: { code: 'RunNotFound' } } });
    }
  });

  it('pages the transcript with a cursor and filters by agent', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal, mode: 'single' });
    for (let seq = 0; seq < 150; seq++) {
      await api.conversations.append('run/run-1/single', { seq, role: seq % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: `m${seq}` }], meta: { runId: 'run-1', iteration: 0 } });
    }
    const first = await api.request('GET', '/runs/run-1/messages');
    expect((first.body.items as unknown[]).length).toBe(100);
    expect(first.body.nextCursor).toBe('99');
    const second = await api.request('GET', `/runs/run-1/messages?cursor=${first.body.nextCursor}`);
    expect((second.body.items as { seq: number }[]).map((m) => m.seq)).toEqual([...Array(50).keys()].map((i) => i + 100));
    expect(second.body.nextCursor).toBeUndefined();
    expect((await api.request('GET', '/runs/run-1/messages?agent=coder')).body.items).toEqual([]);
    expect((await api.request('GET', '/runs/run-1/messages?agent=robot')).status).toBe(400);
    expect((await api.request('GET', '/runs/run-1/messages?cursor=abc')).status).toBe(400);
  });

  it('ends a page of large messages before 5 MiB of JSON, at least one message a page, and the cursor goes on', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal, mode: 'single' });
    // 100 messages of ~300 KB (the most one page would hold by count): ~30 MB together.
    const large = 'x'.repeat(300_000);
    for (let seq = 0; seq < 100; seq++) {
      await api.conversations.append('run/run-1/single', { seq, role: seq % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: `${seq}${large}` }], meta: { runId: 'run-1', iteration: 0 } });
    }
    // One message larger than a page is still served, alone.
    await api.conversations.append('run/run-1/single', { seq: 100, role: 'user', content: [{ type: 'text', text: 'y'.repeat(6_000_000) }], meta: { runId: 'run-1', iteration: 0 } });
    const seen: number[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await api.request('GET', `/runs/run-1/messages${cursor ? `?cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      const items = page.body.items as { seq: number }[];
      expect(items.length).toBeGreaterThan(0);
      seen.push(...items.map((m) => m.seq));
      sizes.push(Buffer.byteLength(JSON.stringify(page.body)));
      cursor = page.body.nextCursor as string | undefined;
    } while (cursor);
    expect(seen).toEqual([...Array(101).keys()]);
    // Every page of several messages stays under the bound; the one oversized message comes alone.
    expect(sizes.slice(0, -1).every((size) => size <= pageBytes + 1_000)).toBe(true);
    expect(sizes).toHaveLength(Math.ceil((100 * 300_000) / pageBytes) + 1);
  });

  it('serves workspace files and refuses paths that leave the workspace', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal, mode: 'single' });
    await api.workspace('run-1').write('src/a.ts', new TextEncoder().encode('export {};\n'));
    expect((await api.request('GET', '/runs/run-1/files')).body).toEqual({ items: [{ path: 'src/a.ts', size: 11 }] });
    const file = await api.app.request('/runs/run-1/files/src/a.ts');
    expect([file.status, await file.text(), file.headers.get('content-type')]).toEqual([200, 'export {};\n', 'text/plain; charset=utf-8']);
    expect((await api.request('GET', '/runs/run-1/files/src%2F..%2F..%2Fx')).status).toBe(400);
    expect((await api.request('GET', '/runs/run-1/files/missing.txt')).status).toBe(404);
  });

  it('refuses a file too large for a response with 413 naming the limit, and serves one at the limit', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal, mode: 'single' });
    await api.workspace('run-1').write('big.bin', new Uint8Array(maxFileResponseBytes + 1));
    await api.workspace('run-1').write('fits.bin', new Uint8Array(maxFileResponseBytes));
    const big = await api.request('GET', '/runs/run-1/files/big.bin');
    expect(big).toEqual({
      status: 413,
      body: { error: { code: 'FileTooLarge', message: `big.bin is ${maxFileResponseBytes + 1} bytes; this route returns files of at most ${maxFileResponseBytes} bytes. Read it from the run's workspace in S3 (workspaces/run-1/).` } },
    });
    const fits = await api.app.request('/runs/run-1/files/fits.bin');
    expect([fits.status, (await fits.arrayBuffer()).byteLength]).toEqual([200, maxFileResponseBytes]);
  });

  it('answers a cancel whose stop met a throttle 503 with Retry-After, and lets it be sent again', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal, mode: 'single' });
    const stop = api.starter.stop.bind(api.starter);
    api.starter.stop = async () => {
      throw new OrchestratorUnavailable('StopExecution failed: ThrottlingException');
    };
    const refused = await api.app.request('/runs/run-1/cancel', { method: 'POST' });
    expect([refused.status, refused.headers.get('retry-after'), await refused.json()]).toEqual([
      503,
      String(retryAfterSeconds),
      { error: { code: 'ServiceUnavailable', message: 'Stepwise cannot take this request right now; send it again shortly.' } },
    ]);
    api.starter.stop = stop;
    expect((await api.request('POST', '/runs/run-1/cancel')).status).toBe(202);
    expect(api.starter.stopped).toEqual(['run-1']);
  });

  it('answers a cancel sent again 202, announcing the run once, and a run that ended 409', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal, mode: 'single' });
    await api.request('POST', '/runs', { goal, mode: 'single' });
    const cancelled = { status: 202, body: { runId: 'run-1', status: 'cancelled', phase: 'cancelled' } };
    expect(await api.request('POST', '/runs/run-1/cancel')).toEqual(cancelled);
    expect(await api.request('POST', '/runs/run-1/cancel')).toEqual(cancelled);
    expect(api.starter.announced).toEqual(['run-1']);
    await api.runs.finish('run-2', { status: 'failed', phase: 'failed' });
    expect(await api.request('POST', '/runs/run-2/cancel')).toEqual({
      status: 409,
      body: { error: { code: 'RunNotRunning', message: 'Run run-2 is failed; only a running run can be cancelled.' } },
    });
  });

  it('cancels a running run once', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal, mode: 'single' });
    expect(await api.request('POST', '/runs/run-1/cancel')).toEqual({ status: 202, body: { runId: 'run-1', status: 'cancelled', phase: 'cancelled' } });
    expect(api.starter.stopped).toEqual(['run-1']);
    expect(api.starter.announced).toEqual(['run-1']);
    await api.runs.finish('run-1', { status: 'succeeded', phase: 'complete' });
    expect(await api.request('POST', '/runs/run-1/cancel')).toMatchObject({ status: 409, body: { error: { code: 'RunNotRunning' } } });
  });
});

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document listing every route', async () => {
    const { body } = await memoryApi().request('GET', '/openapi.json');
    const validator = new Validator();
    const result = await validator.validate(body as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(body.openapi).toBe('3.1.0');
    const paths = body.paths as Record<string, Record<string, unknown>>;
    expect(Object.entries(paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)).sort()).toEqual([
      'DELETE /mcp',
      'DELETE /memories/{path}',
      'DELETE /schedules/{scheduleId}',
      'GET /.well-known/agent-card.json',
      'GET /agents',
      'GET /evals',
      'GET /evals/{evalId}',
      'GET /health',
      'GET /mcp',
      'GET /memories',
      'GET /memories/{path}',
      'GET /openapi.json',
      'GET /runs',
      'GET /runs/{runId}',
      'GET /runs/{runId}/events',
      'GET /runs/{runId}/events/page',
      'GET /runs/{runId}/files',
      'GET /runs/{runId}/files/{path}',
      'GET /runs/{runId}/messages',
      'GET /schedules',
      'GET /schedules/{scheduleId}',
      'POST /a2a',
      'POST /agui',
      'POST /evals',
      'POST /mcp',
      'POST /runs',
      'POST /runs/{runId}/approvals/{toolUseId}',
      'POST /runs/{runId}/cancel',
      'POST /runs/{runId}/fork',
      'POST /schedules',
      'POST /schedules/{scheduleId}/pause',
      'POST /schedules/{scheduleId}/resume',
    ]);
    const fork = JSON.stringify((paths['/runs/{runId}/fork'] as { post: unknown }).post);
    expect(fork).toContain('"fromSeq"');
    // An agent's place is any agent name now that agents are data (docs/agents.md), not one of three.
    expect(fork).toContain('"agent":{"type":"string","pattern":"^[a-z0-9-]{1,64}$"');
    const decision = JSON.stringify((paths['/runs/{runId}/approvals/{toolUseId}'] as { post: unknown }).post);
    expect(decision).toContain('"enum":["approve","deny"]');
    const run = JSON.stringify((body.components as { schemas: Record<string, unknown> }).schemas.Run);
    expect(run).toContain('"waitingFor"');
    expect(run).toContain('"forkedFrom"');
    const runProperties = Object.keys((body.components as { schemas: Record<string, { properties: object }> }).schemas.Run?.properties ?? {});
    expect(runProperties).toEqual(expect.arrayContaining(['agent', 'workflow', 'agents']));
    const schema = JSON.stringify((paths['/runs'] as { post: unknown }).post);
    expect(schema).toContain('"maxLength":100000');
    expect(schema).toContain('"enum":["single","multi"]');
    expect(schema).toContain('"agent":{"type":"string","description":"The agent to run (`GET /agents` lists them)."}');
    expect(schema).toContain('"workflow":{"type":"string","description":"The workflow to run (`GET /agents` lists them)."}');
    const agents = JSON.stringify((paths['/agents'] as { get: unknown }).get);
    expect(agents).toContain('"$ref":"#/components/schemas/AgentsPage"');
    const summary = (body.components as { schemas: Record<string, { required?: string[] }> }).schemas.AgentSummary;
    expect(summary?.required?.sort()).toEqual(['builtin', 'description', 'kind', 'name', 'tools', 'version']);
  });

  it('describes exactly the routes the app serves, except the local-only /_local/* ones', async () => {
    const api = memoryApi();
    api.app.route('/', localEventRoutes({ put: async () => ({}), list: () => [], deadLetters: () => [] }));
    // Hono writes `/runs/:runId/files/:path{.+}`; OpenAPI writes `/runs/{runId}/files/{path}`.
    // Middleware (the caller, read on every /runs route) is registered as `ALL`; it is not a route.
    const served = new Set(api.app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path.replace(/:(\w+)(\{[^}]*\})?/g, '{$1}')}`));
    const local = [...served].filter((route) => route.split(' ')[1]?.startsWith('/_local/'));
    expect(local.sort()).toEqual(['GET /_local/dead-letters', 'GET /_local/events', 'POST /_local/events']);

    const { body } = await api.request('GET', '/openapi.json');
    const paths = body.paths as Record<string, Record<string, unknown>>;
    const documented = Object.entries(paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual([...served].filter((route) => !local.includes(route)).sort());
  });
});

/** Opens the approval request of run-1's call toolu_1 (a write_file of a.md), as the request step does. */
function openWriteRequest(api: ReturnType<typeof memoryApi>) {
  return api.approvals.open({
    runId: 'run-1',
    toolUseId: 'toolu_1',
    agent: 'single',
    conversationId: 'run/run-1/single',
    seq: 1,
    name: 'write_file',
    input: { path: 'a.md', content: 'A' },
    requestedAt: '2026-01-01T00:00:00.000Z',
  });
}

describe('approvals through the API', () => {
  /** A running run whose call toolu_1 has an approval request (and, unless told, a wait on token-1). */
  async function waitingRun(api: ReturnType<typeof memoryApi>, { waiting = true } = {}) {
    await api.request('POST', '/runs', { goal, mode: 'single', approvals: { tools: ['write_file'] } });
    await openWriteRequest(api);
    if (waiting) await api.approvals.attachToken('run-1', 'toolu_1', 'token-1');
  }

  it('records a run\'s approval list, added to the deployment\'s, and refuses unknown tools', async () => {
    const api = memoryApi({ approvalTools: ['edit_file'] });
    await api.request('POST', '/runs', { goal, mode: 'single', approvals: { tools: ['write_file', 'edit_file', 'write_file'] } });
    expect((await api.runs.get('run-1'))?.approvals).toEqual({
      tools: ['write_file', 'edit_file'],
      layers: [
        { from: 'deployment', tools: ['edit_file'] },
        { from: 'run', tools: ['write_file', 'edit_file'] },
      ],
    });
    await api.request('POST', '/runs', { goal, mode: 'single' });
    expect((await api.runs.get('run-2'))?.approvals).toEqual({ tools: ['edit_file'], layers: [{ from: 'deployment', tools: ['edit_file'] }] });
    expect((await memoryApi().request('POST', '/runs', { goal })).status).toBe(202);

    const refused = await api.request('POST', '/runs', { goal, approvals: { tools: ['shell'] } });
    expect(refused).toMatchObject({ status: 400, body: { error: { issues: [{ path: 'approvals.tools.0' }] } } });
    expect((await api.request('POST', '/runs', { goal, approvals: { tools: 'write_file' } })).status).toBe(400);
    expect((await api.request('POST', '/runs', { goal, approvals: { tools: [], everything: true } })).status).toBe(400);
  });

  it('gates and rules the MCP and Lambda tools the deployment has, and refuses others rather than run them ungated', async () => {
    const api = memoryApi({ externalToolNames: { mcpServers: ['docs'], lambdaTools: ['word_count'] } });
    const approvals = { tools: ['docs__search', 'word_count', 'write_file'], rules: [{ tool: 'docs__fetch', input: { url: 'https://internal/**' }, action: 'deny' }] };
    expect((await api.request('POST', '/runs', { goal, mode: 'single', approvals })).status).toBe(202);
    expect((await api.runs.get('run-1'))?.approvals).toEqual({
      tools: ['write_file', 'docs__search', 'word_count'],
      rules: approvals.rules,
      layers: [{ from: 'run', tools: ['write_file', 'docs__search', 'word_count'], rules: approvals.rules }],
    });

    const known = 'calculator, read_file, write_file, list_files, edit_file, finish_plan, docs__<tool>, word_count (and <server>__* for every tool of a server)';
    for (const name of ['nosuch__x', 'shout', 'docs__', 'docs']) {
      const refused = await api.request('POST', '/runs', { goal, mode: 'single', approvals: { tools: [name] } });
      expect(refused).toMatchObject({
        status: 400,
        body: { error: { code: 'ValidationFailed', issues: [{ path: 'approvals.tools.0', message: `unknown tool "${name}"; this deployment has ${known}` }] } },
      });
      const ruled = await api.request('POST', '/runs', { goal, mode: 'single', approvals: { rules: [{ tool: name, action: 'deny' }] } });
      expect(ruled).toMatchObject({ status: 400, body: { error: { issues: [{ path: 'approvals.rules.0.tool' }] } } });
    }
    // A deployment without external tools refuses their names.
    const plain = memoryApi();
    for (const name of ['docs__search', 'word_count']) {
      expect(await plain.request('POST', '/runs', { goal, mode: 'single', approvals: { tools: [name] } })).toMatchObject({ status: 400, body: { error: { issues: [{ path: 'approvals.tools.0' }] } } });
    }
    expect(api.runs.runs.size + plain.runs.runs.size).toBe(1);
  });

  it('gates the external tools of a run started through AG-UI as of one started with POST /runs', async () => {
    const api = memoryApi({ externalToolNames: { mcpServers: ['docs'], lambdaTools: [] } });
    const agui = (tools: string[]) =>
      api.request('POST', '/agui', {
        threadId: 't-1',
        runId: 'r-1',
        state: {},
        messages: [{ id: 'm1', role: 'user', content: 'Search.' }],
        tools: [],
        context: [],
        forwardedProps: { stepwise: { approvals: { tools } } },
      });
    expect(await agui(['nosuch__x'])).toMatchObject({ status: 400, body: { error: { issues: [{ path: 'forwardedProps.stepwise.approvals.tools.0' }] } } });
    expect((await agui(['docs__search'])).status).toBe(200);
    expect((await api.runs.get('r-1'))?.approvals).toEqual({ tools: ['docs__search'], layers: [{ from: 'run', tools: ['docs__search'] }] });
  });

  it('shows the calls of a run whose policy only has rules: a call a rule makes wait, and the decisions rules made', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal, mode: 'single', approvals: { rules: [{ tool: 'write_file', action: 'ask' }] } });
    await openWriteRequest(api);
    expect((await api.request('GET', '/runs/run-1')).body.waitingFor).toEqual([
      { toolUseId: 'toolu_1', name: 'write_file', input: { path: 'a.md', content: 'A' }, requestedAt: '2026-01-01T00:00:00.000Z' },
    ]);
    expect((await api.request('GET', '/runs')).body.items).toEqual([expect.objectContaining({ runId: 'run-1', waitingFor: 1 })]);
    await api.approvals.decide('run-1', 'toolu_1', { decision: 'deny', decidedAt: '2026-01-01T00:00:01.000Z', decidedBy: 'rule:0' });
    expect((await api.request('GET', '/runs/run-1')).body.decisions).toEqual([
      { toolUseId: 'toolu_1', name: 'write_file', decision: 'deny', decidedAt: '2026-01-01T00:00:01.000Z', decidedBy: 'rule:0' },
    ]);
  });

  it('shows the undecided calls of a running run in waitingFor', async () => {
    const api = memoryApi();
    await waitingRun(api);
    const run = await api.request('GET', '/runs/run-1');
    expect(run.body.waitingFor).toEqual([
      { toolUseId: 'toolu_1', name: 'write_file', input: { path: 'a.md', content: 'A' }, requestedAt: '2026-01-01T00:00:00.000Z' },
    ]);
    await api.request('POST', '/runs/run-1/cancel');
    expect((await api.request('GET', '/runs/run-1')).body.waitingFor).toEqual([]);
  });

  it('records a decision once and resumes the waiting loop with it', async () => {
    const api = memoryApi();
    await waitingRun(api);
    const first = await api.request('POST', '/runs/run-1/approvals/toolu_1', { decision: 'deny', reason: '  not now ' });
    expect(first).toEqual({ status: 202, body: { runId: 'run-1', toolUseId: 'toolu_1', decision: 'deny', reason: 'not now', decidedAt: expect.any(String), decidedBy: 'local' } });
    expect(api.tokens.resumed).toEqual([{ token: 'token-1', output: { decision: 'deny', reason: 'not now' } }]);
    expect((await api.request('GET', '/runs/run-1')).body.waitingFor).toEqual([]);

    const second = await api.request('POST', '/runs/run-1/approvals/toolu_1', { decision: 'approve' });
    expect(second).toMatchObject({ status: 409, body: { error: { code: 'ApprovalAlreadyDecided', message: expect.stringContaining('already decided: deny (not now)') } } });
    expect((await api.approvals.get('run-1', 'toolu_1'))?.decision).toBe('deny');
  });

  it('records a decision made before the loop waits, without a token to resume', async () => {
    const api = memoryApi();
    await waitingRun(api, { waiting: false });
    expect((await api.request('POST', '/runs/run-1/approvals/toolu_1', { decision: 'approve' })).status).toBe(202);
    expect(api.tokens.resumed).toEqual([]);
  });

  it('accepts a decision whose token no longer waits: the loop reads the record when it wakes', async () => {
    const api = memoryApi();
    await waitingRun(api);
    api.tokens.gone.add('token-1');
    expect((await api.request('POST', '/runs/run-1/approvals/toolu_1', { decision: 'approve' })).status).toBe(202);
    expect((await api.approvals.get('run-1', 'toolu_1'))?.decision).toBe('approve');
  });

  it.each([
    ['a missing decision', {}, 'decision'],
    ['an unknown decision', { decision: 'maybe' }, 'decision'],
    ['an empty reason', { decision: 'deny', reason: ' ' }, 'reason'],
    ['a reason over 2,000 characters', { decision: 'deny', reason: 'x'.repeat(2001) }, 'reason'],
    ['an unknown field', { decision: 'approve', by: 'me' }, '(body)'],
    ['an edited input with a denial', { decision: 'deny', input: { path: 'a.md', content: 'B' } }, 'input'],
    ['an edited input that is not an object', { decision: 'approve', input: 'a.md' }, 'input'],
    ['an edited input that does not fit the tool', { decision: 'approve', input: { path: 'a.md' } }, 'input.content'],
    ['an empty message', { decision: 'approve', message: '' }, 'message'],
  ])('refuses %s with a 400, deciding nothing', async (_name, body, path) => {
    const api = memoryApi();
    await waitingRun(api);
    const res = await api.request('POST', '/runs/run-1/approvals/toolu_1', body);
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'ValidationFailed' } } });
    expect(res.body.error?.issues?.map((i) => i.path)).toContain(path);
    expect((await api.approvals.get('run-1', 'toolu_1'))?.decision).toBeUndefined();
  });

  it('answers 404 for a call with no approval request, and 409 once the run has ended', async () => {
    const api = memoryApi();
    await waitingRun(api);
    expect(await api.request('POST', '/runs/run-1/approvals/toolu_2', { decision: 'approve' })).toMatchObject({
      status: 404,
      body: { error: { code: 'ApprovalNotFound', message: 'Run run-1 has no approval request for tool call toolu_2.' } },
    });
    await api.request('POST', '/runs/run-1/cancel');
    expect(await api.request('POST', '/runs/run-1/approvals/toolu_1', { decision: 'approve' })).toMatchObject({
      status: 409,
      body: { error: { code: 'RunNotRunning', message: 'Run run-1 is cancelled; approvals can be decided only while it runs.' } },
    });
  });
});
