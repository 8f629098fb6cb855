/**
 * The MCP server at /mcp on the API's in-memory fakes, driven by the official SDK client: its
 * tools answer as their routes do for the same caller (docs/mcp.md).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../functions/api/app.js';
import { agentToolName } from '../../functions/api/mcp-tools.js';
import { asksForProgress } from '../../functions/api/mcp-server.js';
import { runText, runsText } from '../../functions/api/mcp-text.js';
import type { RunView } from '../../functions/api/schemas.js';
import { AgentCatalog } from '../../functions/core/definitions/catalog.js';
import { as, memoryApi } from '../support/api.js';

const alice = as('alice', { tenant: 'acme' });
const bob = as('bob', { tenant: 'acme' });
const rita = as('rita', { tenant: 'acme', scopes: ['approve'] });

const triage = { name: 'bug-triage', description: 'Sorts a request into bug, question or feature.', instructions: 'Answer with one word.', tools: ['calculator'] };

/** The API on fakes, and an MCP client of it connecting as `headers` say (the local caller without). */
async function connect(extra: Partial<ApiDeps> = {}, api = memoryApi(extra)) {
  const clients: Client[] = [];
  const as_ = async (headers: Record<string, string> = {}) => {
    const client = new Client({ name: 'test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL('http://stepwise.test/mcp'), {
      requestInit: { headers },
      fetch: (url, init) => Promise.resolve(api.app.request(String(url), init)),
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  };
  return { api, as: as_, close: () => Promise.all(clients.map((client) => client.close())) };
}

const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
const text = (result: CallToolResult) => result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

describe('the MCP server', () => {
  it('lists the run tools, and one run_<agent> tool per defined agent (not the built-ins)', async () => {
    const plain = await connect();
    expect((await (await plain.as()).listTools()).tools.map((tool) => tool.name)).toEqual(['start_run', 'get_run', 'list_runs', 'cancel_run', 'decide_approval']);
    const defined = await connect({ agents: AgentCatalog.from({ agents: [triage] }) });
    const { tools } = await (await defined.as()).listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['start_run', 'get_run', 'list_runs', 'cancel_run', 'decide_approval', 'run_bug_triage']);
    expect(tools.at(-1)?.inputSchema).toMatchObject({ type: 'object', properties: { goal: { type: 'string' } }, required: ['goal'] });
    await Promise.all([plain.close(), defined.close()]);
  });

  it('starts a run as its caller and reads it back, text and structured content alike', async () => {
    const mcp = await connect({ agents: AgentCatalog.from({ agents: [triage] }) });
    const client = await mcp.as(alice);
    const started = await call(client, agentToolName('bug-triage'), { goal: 'Is this a bug?' });
    expect(started).toEqual({
      content: [{ type: 'text', text: 'Run run-1 started (status running, phase idle). Follow it with get_run.' }],
      structuredContent: { runId: 'run-1', status: 'running', phase: 'idle' },
    });
    const record = mcp.api.runs.runs.get('run-1');
    expect([record?.owner, record?.agent?.name, mcp.api.starter.started.length]).toEqual([{ principal: 'test#alice', tenant: 'acme' }, 'bug-triage', 1]);
    const read = await call(client, 'get_run', { runId: 'run-1' });
    const view = (await mcp.api.request('GET', '/runs/run-1', undefined, alice)).body as unknown as RunView;
    expect(read).toEqual({ content: [{ type: 'text', text: runText(view) }], structuredContent: view });
    const listed = await call(client, 'list_runs', { limit: 5 });
    expect(listed.structuredContent).toEqual((await mcp.api.request('GET', '/runs?limit=5', undefined, alice)).body);
    expect(text(listed)).toBe(runsText(listed.structuredContent as Parameters<typeof runsText>[0]));
    await mcp.close();
  });

  it("answers another caller's run as a missing one: the route's RunNotFound, as a tool error", async () => {
    const mcp = await connect();
    const started = await call(await mcp.as(alice), 'start_run', { goal: 'Mine.', mode: 'single' });
    const runId = String(started.structuredContent?.runId);
    const client = await mcp.as(bob);
    for (const [tool, args] of [
      ['get_run', { runId }],
      ['cancel_run', { runId }],
      ['decide_approval', { runId, toolUseId: 'toolu_1', decision: 'approve' }],
    ] as const) {
      const hidden = await call(client, tool, args);
      const missing = await call(client, tool, { ...args, runId: 'no-such-run' });
      expect(hidden).toEqual({
        content: [{ type: 'text', text: `RunNotFound: No run ${runId}.` }],
        structuredContent: { error: { code: 'RunNotFound', message: `No run ${runId}.` } },
        isError: true,
      });
      expect(JSON.stringify(hidden).replaceAll(runId, 'no-such-run')).toBe(JSON.stringify(missing));
    }
    expect(mcp.api.runs.runs.get(runId)?.status).toBe('running');
    expect((await call(client, 'list_runs', {})).structuredContent).toEqual({ items: [] });
    await mcp.close();
  });

  it("refuses what the route refuses, with the route's code and each field at fault", async () => {
    const mcp = await connect({ maxRunningRuns: 1 });
    const client = await mcp.as(alice);
    const invalid = await call(client, 'start_run', { goal: ' ', agent: 'nobody' });
    expect(invalid.isError).toBe(true);
    expect(text(invalid)).toMatch(/^ValidationFailed: .*\n- goal: must not be empty\n- agent: unknown agent "nobody"; this deployment has assistant/);
    expect((await call(client, 'start_run', { goal: 'One.' })).isError).toBeUndefined();
    const quota = await call(client, 'start_run', { goal: 'Two.' });
    expect([quota.isError, (quota.structuredContent?.error as { code: string }).code]).toEqual([true, 'TooManyRuns']);
    expect(mcp.api.runs.runs.size).toBe(1);
    await mcp.close();
  });

  it('decides a waiting call as the reviewer, and cancels as the owner', async () => {
    const mcp = await connect();
    // A run that gates write_file (start_run names no policy): its call toolu_1 waits for a reviewer.
    const started = await mcp.api.request('POST', '/runs', { goal: 'Write a.md.', mode: 'single', approvals: { tools: ['write_file'] } }, alice);
    const runId = String(started.body.runId);
    await mcp.api.approvals.open({
      runId,
      toolUseId: 'toolu_1',
      agent: 'single',
      conversationId: `run/${runId}/single`,
      seq: 1,
      name: 'write_file',
      input: { path: 'a.md', content: 'x' },
      requestedAt: '2026-01-01T00:00:00.000Z',
    });
    await mcp.api.approvals.attachToken(runId, 'toolu_1', 'token-1');
    const alices = await mcp.as(alice);
    expect(text(await call(alices, 'get_run', { runId }))).toContain('Waiting for a reviewer: write_file (toolUseId toolu_1); decide with decide_approval.');
    const refused = await call(alices, 'decide_approval', { runId, toolUseId: 'toolu_1', decision: 'approve' });
    expect([refused.isError, (refused.structuredContent?.error as { code: string }).code]).toEqual([true, 'Forbidden']);
    const decided = await call(await mcp.as(rita), 'decide_approval', { runId, toolUseId: 'toolu_1', decision: 'deny', message: 'Not today.' });
    expect(decided).toEqual({
      content: [{ type: 'text', text: `Recorded: deny of tool call toolu_1 in run ${runId}, by test#rita. The run goes on.` }],
      structuredContent: { runId, toolUseId: 'toolu_1', decision: 'deny', message: 'Not today.', decidedAt: expect.any(String), decidedBy: 'test#rita' },
    });
    expect(mcp.api.tokens.resumed).toHaveLength(1);
    const cancelled = await call(alices, 'cancel_run', { runId });
    expect([text(cancelled), mcp.api.starter.stopped]).toEqual([`Run ${runId} cancelled (status cancelled, phase cancelled).`, [runId]]);
    await mcp.close();
  });

  it('with wait and a progress token, streams a progress notification per change and answers with the run as it ended', async () => {
    const mcp = await connect({ mcp: { waitMs: 5_000, pollMs: 5 } });
    const client = await mcp.as(alice);
    const progress: { progress: number; message?: string | undefined }[] = [];
    const finishing = (async () => {
      // The run goes on once the tool has read it twice, then succeeds.
      while (progress.length < 1) await new Promise((r) => setTimeout(r, 5));
      const run = mcp.api.runs.runs.get('run-1');
      if (run) Object.assign(run, { phase: 'executing', iterations: { single: 1 } });
      while (progress.length < 2) await new Promise((r) => setTimeout(r, 5));
      if (run) Object.assign(run, { status: 'succeeded', phase: 'complete', result: { response: 'Done: 5.', actionsTaken: [] } });
    })();
    const ended = (await client.callTool({ name: 'start_run', arguments: { goal: 'Add 2 and 3.', mode: 'single', wait: true } }, undefined, {
      onprogress: (p) => progress.push({ progress: p.progress, message: p.message }),
    })) as CallToolResult;
    await finishing;
    expect(progress).toEqual([
      { progress: 1, message: 'Run run-1 is running (phase idle).' },
      { progress: 2, message: 'Run run-1 is running (phase executing; iterations: single 1).' },
      { progress: 3, message: 'Run run-1 is succeeded (phase complete; iterations: single 1).' },
    ]);
    expect([text(ended), ended.structuredContent?.status]).toEqual(['Run run-1 is succeeded (phase complete; iterations: single 1).\n\nDone: 5.', 'succeeded']);
    await mcp.close();
  });

  it('with wait and no progress token, answers JSON once the wait is over, the run still running', async () => {
    const mcp = await connect({ mcp: { waitMs: 30, pollMs: 5 } });
    const result = await call(await mcp.as(), 'start_run', { goal: 'Slow.', wait: true });
    expect([result.isError, result.structuredContent?.status, text(result)]).toEqual([undefined, 'running', 'Run run-1 is running (phase idle).']);
    expect(asksForProgress({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_run', _meta: { progressToken: 7 } } })).toBe(true);
    expect(asksForProgress([{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { progressToken: 7 } } }, null])).toBe(false);
    await mcp.close();
  });

  it('answers GET and DELETE with 405 (no sessions), a credential-less caller with 401, and documents POST /mcp', async () => {
    const api = memoryApi();
    for (const method of ['GET', 'DELETE']) {
      const res = await api.app.request('/mcp', { method });
      expect([res.status, res.headers.get('allow'), ((await res.json()) as { error: { code: string } }).error.code]).toEqual([405, 'POST', 'MethodNotAllowed']);
    }
    const badToken = await api.request('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { authorization: 'Basic eA==' });
    expect(badToken.status).toBe(401);
    const { body } = await api.request('GET', '/openapi.json');
    expect(Object.keys((body.paths as Record<string, object>)['/mcp'] ?? {})).toEqual(['post', 'get', 'delete']);
  });
});
