/**
 * The HTTP API of agents as data (docs/agents.md): `GET /agents` lists the deployment's catalog,
 * `POST /runs` and `POST /agui` run what it names and refuse what it does not, and a run shows the
 * definition and version it follows.
 */
import { EventType } from '@ag-ui/core';
import { describe, expect, it } from 'vitest';
import { iamCallers } from '../../functions/api/callers.js';
import { AgentCatalog } from '../../functions/core/definitions/catalog.js';
import { builtinAgents, builtinWorkflows, versionOf } from '../../functions/core/definitions/definition.js';
import { as, memoryApi } from '../support/api.js';
import { eventsOf, parseSse } from '../support/sse.js';

const goal = 'Add up the receipts.';

const bookkeeper = {
  name: 'bookkeeper',
  description: 'Adds up receipts and keeps the totals in the workspace.',
  instructions: 'You keep the books. Use the calculator for every sum.',
  tools: ['calculator', 'write_file'],
  model: 'claude-books',
  maxIterations: 8,
};
const audit = { name: 'audit', description: 'The bookkeeper adds, the assistant checks.', steps: ['bookkeeper', 'assistant'] };
const catalog = AgentCatalog.from({ agents: [bookkeeper], workflows: [audit] });
const [assistant, architect, coder] = builtinAgents;
const [planAndBuild] = builtinWorkflows;

/**
 * The refusal of an agent name, listing the names a request may run. Whether the built-in Architect
 * and Coder (plan-and-build's steps) are among them is intake's rule, not the API's: either is taken.
 */
const unknownAgent = (name: string, ...defined: string[]) =>
  expect.stringMatching(new RegExp(`^unknown agent "${name}"; this deployment has assistant(, architect, coder)?${defined.map((d) => `, ${d}`).join('')}$`));

describe('GET /agents', () => {
  it("lists the deployment's agents, the built-ins first, then its workflows, each with its version", async () => {
    const res = await memoryApi({ agents: catalog }).request('GET', '/agents');
    expect(res.status).toBe(200);
    const items = res.body.items as { name: string }[];
    expect(items.map((item) => item.name)).toEqual(['assistant', 'architect', 'coder', 'bookkeeper', 'plan-and-build', 'audit']);
    expect(items.find((item) => item.name === 'bookkeeper')).toEqual({
      name: 'bookkeeper',
      kind: 'agent',
      description: bookkeeper.description,
      version: versionOf(bookkeeper),
      tools: ['calculator', 'write_file'],
      model: 'claude-books',
      builtin: false,
    });
    expect(items.find((item) => item.name === 'audit')).toEqual({
      name: 'audit',
      kind: 'workflow',
      description: audit.description,
      version: versionOf(audit),
      tools: [],
      builtin: false,
      steps: ['bookkeeper', 'assistant'],
    });
  });

  it('lists the built-ins of a deployment that defines none', async () => {
    const res = await memoryApi().request('GET', '/agents');
    expect(res.body.items).toEqual([
      ...[assistant, architect, coder].map((agent) => ({
        name: agent?.name,
        kind: 'agent',
        description: agent?.description,
        version: agent && versionOf(agent),
        tools: agent?.tools,
        builtin: true,
      })),
      { name: 'plan-and-build', kind: 'workflow', description: planAndBuild?.description, version: planAndBuild && versionOf(planAndBuild), tools: [], builtin: true, steps: ['architect', 'coder'] },
    ]);
  });

  it('answers any caller the API knows, and refuses one it does not with 401', async () => {
    const api = memoryApi({ agents: catalog });
    expect((await api.request('GET', '/agents', undefined, as('someone', { tenant: 'elsewhere' }))).status).toBe(200);
    const iam = memoryApi({ agents: catalog, authenticate: iamCallers({}) });
    expect(await iam.request('GET', '/agents')).toMatchObject({ status: 401, body: { error: { code: 'Unauthenticated' } } });
  });
});

describe('POST /runs with an agent or a workflow', () => {
  it('runs the agent it names, with its limit, and the run shows the agent and its version', async () => {
    const api = memoryApi({ agents: catalog });
    expect(await api.request('POST', '/runs', { goal, agent: 'bookkeeper' })).toEqual({ status: 202, body: { runId: 'run-1', status: 'running', phase: 'idle' } });
    expect(api.starter.started).toEqual([
      { runId: 'run-1', mode: 'single', agent: 'bookkeeper', label: 'bookkeeper', conversationId: 'run/run-1/bookkeeper', maxIterations: 8, model: '' },
    ]);
    const version = versionOf(bookkeeper);
    const run = await api.request('GET', '/runs/run-1');
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ mode: 'single', agent: { name: 'bookkeeper', version }, agents: [{ place: 'bookkeeper', name: 'bookkeeper', version }] });
    expect(run.body.workflow).toBeUndefined();
  });

  it('runs a workflow it names, and the run shows the workflow, its version and each agent’s', async () => {
    const api = memoryApi({ agents: catalog });
    await api.request('POST', '/runs', { goal, workflow: 'plan-and-build' });
    const run = await api.request('GET', '/runs/run-1');
    expect(run.body).toMatchObject({
      mode: 'multi',
      workflow: { name: 'plan-and-build', version: planAndBuild && versionOf(planAndBuild) },
      agents: [
        { place: 'architect', name: 'architect', version: architect && versionOf(architect) },
        { place: 'coder', name: 'coder', version: coder && versionOf(coder) },
      ],
    });
  });

  it('records mode single as the agent assistant, whose place stays single', async () => {
    const api = memoryApi({ agents: catalog });
    await api.request('POST', '/runs', { goal, mode: 'single' });
    const run = await api.request('GET', '/runs/run-1');
    expect(run.body).toMatchObject({ agent: { name: 'assistant', version: assistant && versionOf(assistant) }, agents: [{ place: 'single', name: 'assistant' }] });
  });

  it("streams a defined agent's run under the agent's name, from the agent's own conversation, naming the agent and version first", async () => {
    const api = memoryApi({ agents: catalog });
    await api.request('POST', '/runs', { goal, agent: 'bookkeeper' });
    const meta = { runId: 'run-1', iteration: 0 };
    await api.conversations.append('run/run-1/bookkeeper', { seq: 0, role: 'user', content: [{ type: 'text', text: goal }], meta });
    await api.conversations.append('run/run-1/bookkeeper', { seq: 1, role: 'assistant', content: [{ type: 'text', text: 'The total is 12.' }], meta: { ...meta, stopReason: 'end_turn' } });
    await api.runs.finish('run-1', { status: 'succeeded', phase: 'complete', result: { response: 'The total is 12.', actionsTaken: [] } });
    const page = await api.request('GET', '/runs/run-1/events/page');
    const events = (page.body.items as { event: { type: string; name?: string; value?: Record<string, unknown>; stepName?: string; delta?: string } }[]).map((item) => item.event);
    // The stream's header names the agent and its version, as the run record does.
    expect(events.find((e) => e.name === 'stepwise.run')?.value).toMatchObject({ mode: 'single', agent: { name: 'bookkeeper', version: versionOf(bookkeeper) } });
    expect(events.filter((e) => e.type === 'STEP_STARTED' || e.type === 'STEP_FINISHED')).toEqual([
      { type: 'STEP_STARTED', stepName: 'bookkeeper' },
      { type: 'STEP_FINISHED', stepName: 'bookkeeper' },
    ]);
    expect(events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta)).toEqual(['The total is 12.']);
  });

  it.each([
    ['an agent the deployment does not have', { agent: 'nobody' }, 'agent', unknownAgent('nobody', 'bookkeeper')],
    ['a workflow the deployment does not have', { workflow: 'nothing' }, 'workflow', 'unknown workflow "nothing"; this deployment has plan-and-build, audit'],
    ['an agent named as a workflow', { workflow: 'bookkeeper' }, 'workflow', 'unknown workflow "bookkeeper"; this deployment has plan-and-build, audit'],
    ['a mode and an agent', { mode: 'single', agent: 'bookkeeper' }, 'agent', 'name one of mode, agent or workflow'],
    ['an agent and a workflow', { agent: 'bookkeeper', workflow: 'audit' }, 'agent', 'name one of mode, agent or workflow'],
    ['a session on a workflow', { workflow: 'audit', sessionId: 's1' }, 'sessionId', 'sessions continue one agent\'s conversation; name an agent (or mode "single") with a sessionId'],
    ['an agent name that is not a string', { agent: 7 }, 'agent', expect.any(String)],
  ])('refuses %s with a 400 naming the field, and writes nothing', async (_name, fields, path, message) => {
    const api = memoryApi({ agents: catalog });
    const res = await api.request('POST', '/runs', { goal, ...fields });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'ValidationFailed' } } });
    expect(res.body.error?.issues).toEqual([{ path, message }]);
    expect(api.writes()).toBe(0);
  });

  it("refuses the agents of another deployment's catalog", async () => {
    const api = memoryApi();
    const res = await api.request('POST', '/runs', { goal, agent: 'bookkeeper' });
    expect(res.body.error?.issues).toEqual([{ path: 'agent', message: unknownAgent('bookkeeper') }]);
    expect(api.writes()).toBe(0);
  });
});

describe('POST /agui with an agent', () => {
  const input = (stepwise: Record<string, unknown>) => ({
    threadId: 'thread-1',
    runId: 'agui-1',
    messages: [{ id: 'm1', role: 'user', content: goal }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: { stepwise },
  });

  it("runs the agent forwardedProps.stepwise.agent names on the thread's session", async () => {
    const api = memoryApi({ agents: catalog, stream: { maxDurationMs: 50, fastPollMs: 5, idlePollMs: 10 } });
    const res = await api.app.request('/agui', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input({ agent: 'bookkeeper' })) });
    expect(res.status).toBe(200);
    expect(eventsOf(parseSse(await res.text()))[0]?.event).toEqual({ type: EventType.RUN_STARTED, threadId: 'thread-1', runId: 'agui-1' });
    expect(await api.runs.get('agui-1')).toMatchObject({ mode: 'single', sessionId: 'thread-1', agent: { name: 'bookkeeper', version: versionOf(bookkeeper) } });
    expect(api.starter.started).toEqual([
      { runId: 'agui-1', mode: 'single', agent: 'bookkeeper', label: 'bookkeeper', conversationId: expect.stringMatching(/^session\/.+\/thread-1$/), maxIterations: 8, model: '' },
    ]);
  });

  it.each([
    ['an unknown agent', { agent: 'nobody' }, 'forwardedProps.stepwise.agent', unknownAgent('nobody', 'bookkeeper')],
    ['a workflow', { workflow: 'audit' }, 'forwardedProps.stepwise.workflow', "a thread continues one agent's conversation: name an agent, not a workflow"],
  ])('refuses %s with a 400 naming the field, and starts nothing', async (_name, stepwise, path, message) => {
    const api = memoryApi({ agents: catalog });
    const res = await api.request('POST', '/agui', input(stepwise));
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'ValidationFailed' } } });
    expect(res.body.error?.issues).toEqual([{ path, message }]);
    expect(api.writes()).toBe(0);
  });
});
