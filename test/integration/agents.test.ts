/**
 * A team's own agents through the local stack (docs/agents.md): definitions from STEPWISE_AGENTS,
 * each run's model requests carrying that agent's instructions and only its tools, and the run
 * recording the agent and version it follows; and the same agents through the MCP server at /mcp,
 * driven over HTTP by the official SDK client (docs/mcp.md).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunView } from '../../functions/api/schemas.js';
import { refOf, versionOf } from '../../functions/core/definitions/definition.js';
import type { AgentDefinition } from '../../functions/core/definitions/types.js';
import { createRun } from '../../functions/core/intake/create.js';
import { createRunBody } from '../../functions/core/intake/request.js';
import { localCaller } from '../../functions/core/callers/types.js';
import { intakeWiring } from '../../functions/wiring/intake.js';
import { wire } from '../../functions/wiring/wire.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';
import { callTool, connectMcp, textOf } from '../support/mcp-client.js';

const triage: AgentDefinition = {
  name: 'triage',
  description: 'Sorts a request into bug, question or feature.',
  instructions: 'You triage requests. Answer with one word: bug, question or feature.',
  tools: ['calculator'],
};

const writer: AgentDefinition = {
  name: 'release-notes-writer',
  description: 'Writes release notes into the workspace.',
  instructions: 'You write release notes to NOTES.md.',
  tools: ['write_file', 'read_file'],
  model: 'claude-haiku-4-5',
  maxTokens: 1000,
  maxIterations: 4,
};

const researcher = (side: string): AgentDefinition => ({
  name: `researcher-${side}`,
  description: `Finds arguments ${side === 'a' ? 'for' : 'against'}.`,
  instructions: `You are researcher ${side}. List arguments ${side === 'a' ? 'for' : 'against'} the goal.`,
  tools: [],
});

const editor: AgentDefinition = {
  name: 'editor',
  description: 'Joins the researchers\' answers into one.',
  instructions: 'You are the editor. Join the answers you are given into one short text.',
  tools: [],
};

// Its own policy asks a reviewer before each write.
const gatedWriter: AgentDefinition = {
  name: 'gated-writer',
  description: 'Writes files, each write approved by a reviewer.',
  instructions: 'You write the files you are asked for.',
  tools: ['write_file'],
  approvals: { tools: ['write_file'] },
};

const workflows = [{ name: 'debate', description: 'Two researchers at once, then an editor.', steps: [{ parallel: ['researcher-a', 'researcher-b'] }, 'editor'] }];

const local = useLocalStack({
  STEPWISE_AGENTS: JSON.stringify([triage, writer, researcher('a'), researcher('b'), editor, gatedWriter]),
  STEPWISE_WORKFLOWS: JSON.stringify(workflows),
});

const toolNames = (request: { tools?: unknown[] } | undefined) => request?.tools?.map((t) => (t as { name: string }).name);

describe('a team’s own agents', () => {
  it('runs an agent with its instructions and only its tools, and records the agent and version on the run', async () => {
    const tag = local.book.add('triage', { turn: use(['toolu_1', 'calculator', { operation: 'add', a: 1, b: 1 }]) }, { turn: say('question') });
    const started = await local.post('/runs', { goal: `${tag} How do I reset my password?`, agent: 'triage' });
    expect(started.status).toBe(202);
    const run = await local.waitFor(String(started.body.runId));

    expect(run).toMatchObject({
      status: 'succeeded',
      mode: 'single',
      agent: refOf(triage),
      agents: [{ place: 'triage', ...refOf(triage) }],
      iterations: { triage: 2 },
      result: { response: 'question' },
    });
    const requests = local.book.requests.get('triage') ?? [];
    expect(requests.map(toolNames)).toEqual([['calculator'], ['calculator']]);
    // No file tool, so no workspace rules: the system prompt is the instructions alone.
    expect(requests.map((r) => JSON.stringify(r.system))).toEqual(Array(2).fill(expect.stringContaining(triage.instructions)));
    expect(JSON.stringify(requests[0]?.system)).not.toContain('workspace');
    const transcript = (await local.get(`/runs/${run.runId}/messages`)).body.items as { agent: string }[];
    expect(new Set(transcript.map((m) => m.agent))).toEqual(new Set(['triage']));
  });

  it('uses the agent’s model and answer size, caps its iterations, and answers a call of a tool it lacks with a tool error', async () => {
    const tag = local.book.add(
      'writer',
      { turn: use(['toolu_calc', 'calculator', { operation: 'add', a: 2, b: 2 }]) },
      { turn: use(['toolu_w', 'write_file', { path: 'NOTES.md', content: '# 1.2\n' }]) },
      { turn: say('Wrote NOTES.md.') },
    );
    const started = await local.post('/runs', { goal: `${tag} Notes for 1.2.`, agent: 'release-notes-writer', maxIterations: 50 });
    const run = await local.waitFor(String(started.body.runId));

    expect(run).toMatchObject({ status: 'succeeded', agent: refOf(writer), result: { response: 'Wrote NOTES.md.' } });
    const requests = local.book.requests.get('writer') ?? [];
    expect(requests.map((r) => [r.model, r.max_tokens])).toEqual(Array(3).fill(['claude-haiku-4-5', 1000]));
    expect(requests.map(toolNames)).toEqual(Array(3).fill(['write_file', 'read_file']));
    expect(JSON.stringify(requests[0]?.system)).toContain('The workspace is a private folder');
    // The calculator is not the writer's: the call is answered as an error, nothing ran.
    const results = JSON.stringify(requests[1]?.messages.at(-1));
    expect(results).toContain('"is_error":true');
    expect(results).toMatch(/calculator/);
    expect(await (await fetch(`${local.stack.url}/runs/${run.runId}/files/NOTES.md`)).text()).toBe('# 1.2\n');

    // The agent's limit of 4 iterations caps the request's 50.
    const looping = local.book.add('looping', ...Array.from({ length: 6 }, (_, i) => ({ turn: use([`toolu_r${i}`, 'read_file', { path: 'NOTES.md' }]) })));
    const capped = await local.waitFor(String((await local.post('/runs', { goal: `${looping} Loop.`, agent: 'release-notes-writer', maxIterations: 50 })).body.runId));
    expect(capped).toMatchObject({ status: 'failed', error: { code: 'MaxIterationsExceeded' }, iterations: { 'release-notes-writer': 4 } });
  });

  it('keeps a running run on the version it started with when a deployment changes the agent under it', async () => {
    // The first run of triage (this stack's version) waits for a reviewer before its calculator call.
    const tag = local.book.add('pinned-old', { turn: use(['toolu_pin', 'calculator', { operation: 'add', a: 1, b: 1 }]) }, { turn: say('question') });
    const started = await local.post('/runs', { goal: `${tag} Is this a bug?`, agent: 'triage', approvals: { tools: ['calculator'] } });
    const oldRun = String(started.body.runId);
    await local.waitingOn(oldRun, 1);

    // Meanwhile a new deployment changes triage's instructions: its front door (the intake with the
    // new definitions, on the same table and state machines) starts a run of the new version.
    const changed = { ...triage, instructions: 'You triage requests, newly. Answer with one word.' };
    const newDoor = intakeWiring(
      wire({ ...process.env, STEPWISE_SFN_ENDPOINT: local.stack.sfnEndpoint, STEPWISE_AGENTS: JSON.stringify([changed, writer, researcher('a'), researcher('b'), editor]) }),
    );
    const newTag = local.book.add('pinned-new', { turn: say('feature') });
    const body = createRunBody(newDoor).parse({ goal: `${newTag} Add dark mode.`, agent: 'triage' });
    const { runId: newRun } = await createRun(body, newDoor, { caller: localCaller });
    // Not until the stack is idle: the first run waits for a reviewer meanwhile.
    expect(await local.waitFor(newRun, 10_000, { idle: false })).toMatchObject({ status: 'succeeded', agent: { name: 'triage', version: versionOf(changed) } });

    // The first run goes on with the instructions it started with, and stays on its version.
    expect((await local.post(`/runs/${oldRun}/approvals/toolu_pin`, { decision: 'approve' })).status).toBe(202);
    expect(await local.waitFor(oldRun)).toMatchObject({ status: 'succeeded', agent: refOf(triage), result: { response: 'question' } });
    const oldRequests = local.book.requests.get('pinned-old') ?? [];
    expect(oldRequests).toHaveLength(2);
    for (const request of oldRequests) expect(JSON.stringify(request.system)).toContain(triage.instructions);
    expect(JSON.stringify(local.book.requests.get('pinned-new')?.[0]?.system)).toContain(changed.instructions);
    expect(versionOf(changed)).not.toBe(versionOf(triage));
  });

  it('refuses an unknown agent with the names it has, and keeps mode "single" as the assistant', async () => {
    const refused = await local.post('/runs', { goal: 'x', agent: 'nobody' });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('unknown agent \\"nobody\\"; this deployment has assistant, triage, release-notes-writer, researcher-a, researcher-b, editor');

    const tag = local.book.add('single', { turn: say('Hello.') });
    const run = await local.run(`${tag} Say hello.`);
    expect(run).toMatchObject({ status: 'succeeded', agent: { name: 'assistant' }, agents: [{ place: 'single', name: 'assistant' }], iterations: { single: 1 } });
  });

  it('runs a workflow: a parallel step, then the next agent starting from both answers; the last answer is the run’s', async () => {
    const seen: { system: string; first: string }[] = [];
    const tag = local.book.respondWith('debate', (request) => {
      const system = JSON.stringify(request.system);
      seen.push({ system, first: JSON.stringify(request.messages[0]?.content) });
      const who = /researcher a/.test(system) ? 'A' : /researcher b/.test(system) ? 'B' : 'EDITOR';
      return { turn: say(`answer of ${who}`) };
    });
    const started = await local.post('/runs', { goal: `${tag} Should we ship on Fridays?`, workflow: 'debate' });
    expect(started.status).toBe(202);
    const run = await local.waitFor(String(started.body.runId));

    expect(run).toMatchObject({
      status: 'succeeded',
      mode: 'multi',
      workflow: { name: 'debate' },
      agents: [
        { place: 'researcher-a', step: 0 },
        { place: 'researcher-b', step: 0 },
        { place: 'editor', step: 1 },
      ],
      agentResults: { 'researcher-a': { response: 'answer of A' }, 'researcher-b': { response: 'answer of B' } },
      result: { response: 'answer of EDITOR' },
      iterations: { 'researcher-a': 1, 'researcher-b': 1, editor: 1 },
    });
    expect(seen).toHaveLength(3);
    // The editor worked last, from the goal and both answers.
    const last = seen[2]!;
    expect(last.system).toContain('You are the editor');
    expect(last.first).toContain('Should we ship on Fridays?');
    expect(last.first).toContain('The answer of researcher-a:\\nanswer of A');
    expect(last.first).toContain('The answer of researcher-b:\\nanswer of B');
    const transcript = (await local.get(`/runs/${run.runId}/messages`)).body.items as { agent: string }[];
    expect(transcript.map((m) => m.agent)).toEqual(['researcher-a', 'researcher-a', 'researcher-b', 'researcher-b', 'editor', 'editor']);
  });

  it('runs an agent a Stepwise Run Requested event names, and dead-letters an event naming none the deployment has', async () => {
    const tag = local.book.add('event-agent', { turn: say('bug') });
    const runId = `evt-agent-${Date.now()}`;
    const put = (detail: unknown) => local.post('/_local/events', { Source: 'com.example.ci', DetailType: 'Stepwise Run Requested', Detail: JSON.stringify(detail) });
    expect((await put({ goal: `${tag} The login page is blank.`, agent: 'triage', runId })).status).toBe(200);
    expect(await local.waitFor(runId)).toMatchObject({ status: 'succeeded', agent: refOf(triage), result: { response: 'bug' } });
    expect(JSON.stringify((local.book.requests.get('event-agent') ?? [])[0]?.system)).toContain(triage.instructions);

    const missing = `evt-nobody-${Date.now()}`;
    await put({ goal: 'x', agent: 'nobody', runId: missing });
    expect((await local.get(`/runs/${missing}`)).status).toBe(404);
    const letters = (await local.get('/_local/dead-letters')).body.items as unknown[];
    expect(JSON.stringify(letters)).toContain('unknown agent \\"nobody\\"');
  });
});

describe('the agents through the MCP server at /mcp', () => {
  const clients: Client[] = [];
  afterAll(() => Promise.all(clients.map((client) => client.close())));
  const connect = async (token?: string) => {
    const client = await connectMcp(local.stack.url, token);
    clients.push(client);
    return client;
  };

  /** Reads the run with get_run until it no longer runs. */
  async function polled(client: Client, runId: string): Promise<RunView> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const read = await callTool(client, 'get_run', { runId });
      const run = read.structuredContent as unknown as RunView;
      if (read.isError || run.status !== 'running') return run;
      if (Date.now() > deadline) throw new Error(`Run ${runId} is still running.`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it("lists a tool per defined agent, runs one, and follows the run to its end with get_run", async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      'start_run',
      'get_run',
      'list_runs',
      'cancel_run',
      'decide_approval',
      ...['triage', 'release_notes_writer', 'researcher_a', 'researcher_b', 'editor', 'gated_writer'].map((name) => `run_${name}`),
    ]);
    const tag = local.book.add('mcp-triage', { turn: use(['toolu_1', 'calculator', { operation: 'add', a: 1, b: 1 }]) }, { turn: say('question') });
    const started = await callTool(client, 'run_triage', { goal: `${tag} How do I reset my password?` });
    const runId = String(started.structuredContent?.runId);
    expect(textOf(started)).toBe(`Run ${runId} started (status running, phase idle). Follow it with get_run.`);
    expect(await polled(client, runId)).toMatchObject({ status: 'succeeded', agent: refOf(triage), owner: { principal: 'local' }, result: { response: 'question' } });
    expect(textOf(await callTool(client, 'get_run', { runId }))).toMatch(new RegExp(`^Run ${runId} is succeeded \\(phase complete.*\\)\\.\\n\\nquestion$`));
  });

  it("streams progress until a call waits, lets the reviewer decide it, and answers another tenant's reviewer as for a missing run", async () => {
    const tag = local.book.add('mcp-gated', { turn: use(['toolu_w', 'write_file', { path: 'a.md', content: 'A' }]) }, { turn: say('Written.') });
    const client = await connect();
    const progress: string[] = [];
    const waiting = (await client.callTool({ name: 'start_run', arguments: { goal: `${tag} Write a.md.`, agent: 'gated-writer', wait: true } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ''),
    })) as CallToolResult;
    const runId = String(waiting.structuredContent?.runId);
    expect(textOf(waiting)).toContain('Waiting for a reviewer: write_file (toolUseId toolu_w); decide with decide_approval.');
    expect(progress.at(-1)).toMatch(new RegExp(`^Run ${runId} is running`));
    await local.waitingOn(runId, 1);

    const bob = await connect(await local.stack.issuer.issue({ sub: 'bob', tenant: 'acme', scopes: ['approve', 'admin'] }));
    for (const [tool, args] of [
      ['get_run', { runId }],
      ['decide_approval', { runId, toolUseId: 'toolu_w', decision: 'approve' }],
      ['cancel_run', { runId }],
    ] as const) {
      const hidden = await callTool(bob, tool, args);
      expect([hidden.isError, textOf(hidden)]).toEqual([true, `RunNotFound: No run ${runId}.`]);
    }

    const decided = await callTool(client, 'decide_approval', { runId, toolUseId: 'toolu_w', decision: 'approve' });
    expect(decided.structuredContent).toMatchObject({ runId, toolUseId: 'toolu_w', decision: 'approve', decidedBy: 'local' });
    expect(await polled(client, runId)).toMatchObject({ status: 'succeeded', result: { response: 'Written.' }, decisions: [{ toolUseId: 'toolu_w', decision: 'approve' }] });
    expect((await local.get(`/runs/${runId}/files`)).body.items).toEqual([{ path: 'a.md', size: 1 }]);
  });
});
