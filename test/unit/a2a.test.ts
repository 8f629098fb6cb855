/** A2A on runs, pure parts (docs/a2a.md): the card, a run as a task, a message as a run request, AG-UI events as A2A events. */
import { EventType } from '@ag-ui/core';
import { AgentCard, type Message, Role, StreamResponse, Task } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { agentCard } from '../../functions/api/a2a/card.js';
import { TaskEvents, runRequestOf, taskOf } from '../../functions/api/a2a/tasks.js';
import type { RunView } from '../../functions/api/schemas.js';
import { AgentCatalog } from '../../functions/core/definitions/catalog.js';
import { iamCallers } from '../../functions/api/callers.js';
import { as, memoryApi } from '../support/api.js';

const usage = { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

function runView(fields: Partial<RunView> = {}): RunView {
  return {
    runId: 'run-1',
    mode: 'single',
    goal: 'Add 2 and 3.',
    sessionId: 'ctx-1',
    status: 'running',
    phase: 'executing',
    iterations: {},
    usage,
    createdAt: '2026-11-26T10:00:00.000Z',
    updatedAt: '2026-11-26T10:00:05.000Z',
    waitingFor: [],
    decisions: [],
    ...fields,
  };
}

function message(fields: Partial<Message> & { text?: string; data?: unknown } = {}): Message {
  const { text = 'Add 2 and 3.', data, ...rest } = fields;
  return {
    messageId: 'm-1',
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' },
      ...(data === undefined ? [] : [{ content: { $case: 'data' as const, value: data }, metadata: undefined, filename: '', mediaType: 'application/json' }]),
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...rest,
  };
}

const wire = (events: StreamResponse[]) => events.map((event) => StreamResponse.toJSON(event) as Record<string, Record<string, unknown>>);

describe('the agent card', () => {
  const agents = AgentCatalog.from({
    agents: [{ name: 'triage', description: 'Sorts issues.', instructions: 'Sort them.', tools: ['read_file'] }],
    workflows: [{ name: 'triage-then-build', description: 'Triage, then plan and build.', steps: ['triage'] }],
  }).summaries();

  it('has one skill per agent and workflow a run may name, not the Architect or the Coder alone, and names the interface it is given', () => {
    const card = AgentCard.toJSON(agentCard({ agents, url: 'https://stream.example.com/a2a', auth: 'jwt' })) as Record<string, unknown>;
    expect((card.skills as { id: string }[]).map((s) => s.id)).toEqual(['assistant', 'triage', 'plan-and-build', 'triage-then-build']);
    expect(card.supportedInterfaces).toEqual([{ url: 'https://stream.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
    expect(card.capabilities).toEqual({ streaming: true, pushNotifications: false, extendedAgentCard: false });
  });

  it("asks for the deployment's auth: SigV4 under IAM, a bearer JWT under JWT, locally a bearer token or nothing", () => {
    const security = (auth: 'iam' | 'jwt' | 'local') => {
      const card = AgentCard.toJSON(agentCard({ agents, url: 'http://x/a2a', auth })) as { securitySchemes: Record<string, { httpAuthSecurityScheme: { scheme: string } }>; securityRequirements: unknown[] };
      return [Object.fromEntries(Object.entries(card.securitySchemes).map(([name, s]) => [name, s.httpAuthSecurityScheme.scheme])), card.securityRequirements];
    };
    expect(security('iam')).toEqual([{ sigv4: 'AWS4-HMAC-SHA256' }, [{ schemes: { sigv4: {} } }]]);
    expect(security('jwt')).toEqual([{ bearer: 'Bearer' }, [{ schemes: { bearer: {} } }]]);
    expect(security('local')).toEqual([{ bearer: 'Bearer' }, [{}, { schemes: { bearer: {} } }]]);
  });

  it('changes its version when an agent changes', () => {
    const other = AgentCatalog.from({ agents: [{ name: 'triage', description: 'Sorts issues.', instructions: 'Sort them better.', tools: ['read_file'] }] }).summaries();
    const version = (list: typeof agents) => agentCard({ agents: list, url: 'http://x/a2a', auth: 'local' }).version;
    expect(version(other)).not.toBe(version(agents.filter((a) => a.name !== 'triage-then-build')));
  });
});

describe('a run as a task', () => {
  it('is working while it runs, input-required while a call waits for a reviewer, then completed with its answer as the result artifact', () => {
    const waiting = runView({ waitingFor: [{ toolUseId: 'toolu_w', name: 'write_file', input: { path: 'a.md' }, requestedAt: '2026-11-26T10:00:04.000Z' }] });
    const state = (run: RunView) => (Task.toJSON(taskOf(run)) as { status: { state: string } }).status.state;
    expect([state(runView()), state(waiting), state(runView({ status: 'failed' })), state(runView({ status: 'cancelled' }))]).toEqual([
      'TASK_STATE_WORKING',
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_FAILED',
      'TASK_STATE_CANCELED',
    ]);
    expect(Task.toJSON(taskOf(waiting))).toMatchObject({ status: { message: { role: 'ROLE_AGENT', parts: [{ text: expect.stringContaining('write_file (toolu_w)') }, { data: { waitingFor: [{ toolUseId: 'toolu_w', tool: 'write_file', input: { path: 'a.md' } }] } }] } } });
    const done = runView({ status: 'succeeded', phase: 'complete', result: { response: '5', actionsTaken: ['calculator'], output: { sum: 5 } }, agent: { name: 'assistant', version: 'v1' } });
    expect(Task.toJSON(taskOf(done))).toEqual({
      id: 'run-1',
      contextId: 'ctx-1',
      status: { state: 'TASK_STATE_COMPLETED', message: { messageId: 'run-1:result', contextId: 'ctx-1', taskId: 'run-1', role: 'ROLE_AGENT', parts: [{ text: '5', mediaType: 'text/plain' }] }, timestamp: '2026-11-26T10:00:05.000Z' },
      artifacts: [{ artifactId: 'result', name: 'result', description: "The run's final answer.", parts: [{ text: '5', mediaType: 'text/plain' }, { data: { sum: 5 }, mediaType: 'application/json' }], metadata: { actionsTaken: ['calculator'] } }],
      history: [{ messageId: 'run-1:goal', contextId: 'ctx-1', taskId: 'run-1', role: 'ROLE_USER', parts: [{ text: 'Add 2 and 3.', mediaType: 'text/plain' }] }],
      metadata: { stepwise: { runId: 'run-1', status: 'succeeded', phase: 'complete', agent: 'assistant', usage } },
    });
  });

  it('has the run itself as its context when the run has no session (a workflow)', () => {
    expect(taskOf(runView({ sessionId: undefined })).contextId).toBe('run-1');
  });
});

describe('a message as a run request', () => {
  it('takes its text as the goal and its context as the session, the assistant by default', () => {
    expect(runRequestOf(message({ contextId: 'ctx-9' }), undefined).body).toEqual({ goal: 'Add 2 and 3.', mode: 'single', sessionId: 'ctx-9' });
  });

  it('starts a new context named after the message, so that a repeat of the message names the same one', () => {
    const first = runRequestOf(message(), undefined).body.sessionId;
    expect(first).toMatch(/^a2a-[0-9a-f]{32}$/);
    expect(runRequestOf(message(), undefined).body.sessionId).toBe(first);
    expect(runRequestOf(message({ messageId: 'm-2' }), undefined).body.sessionId).not.toBe(first);
  });

  it('picks the agent or workflow from the metadata or a data part; a workflow takes no new context', () => {
    expect(runRequestOf(message({ metadata: { agent: 'triage' }, contextId: 'c' }), undefined).body).toEqual({ goal: 'Add 2 and 3.', agent: 'triage', sessionId: 'c' });
    expect(runRequestOf(message({ data: { workflow: 'plan-and-build' } }), undefined).body).toEqual({ goal: 'Add 2 and 3.', workflow: 'plan-and-build' });
    expect(runRequestOf(message(), { agent: 'triage' }).body.agent).toBe('triage');
    // Both named: the route refuses them, naming the message's field.
    expect(runRequestOf(message({ metadata: { agent: 'triage' }, data: { workflow: 'plan-and-build' } }), undefined).body).toEqual({ goal: 'Add 2 and 3.', agent: 'triage', workflow: 'plan-and-build' });
  });
});

describe('AG-UI events as A2A events', () => {
  it('sends text as artifact chunks, a waiting call as input-required until its decision, and the end as the result artifact and completed', () => {
    const events = new TaskEvents({ runId: 'run-1', sessionId: 'ctx-1' });
    const out = wire([
      ...events.next({ type: EventType.TEXT_MESSAGE_START, messageId: 'm', role: 'assistant' }),
      ...events.next({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta: 'Writ' }),
      ...events.next({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta: 'ing.' }),
      ...events.next({ type: EventType.TEXT_MESSAGE_END, messageId: 'm' }),
      ...events.next({ type: EventType.CUSTOM, name: 'stepwise.approval_requested', value: { toolCallId: 't1', tool: 'write_file', input: {} } }),
      ...events.next({ type: EventType.CUSTOM, name: 'stepwise.approval_requested', value: { toolCallId: 't2', tool: 'write_file', input: {} } }),
      ...events.next({ type: EventType.CUSTOM, name: 'stepwise.approval_decided', value: { toolCallId: 't1', decision: 'approve' } }),
      ...events.next({ type: EventType.CUSTOM, name: 'stepwise.approval_decided', value: { toolCallId: 't2', decision: 'deny' } }),
      ...events.next({ type: EventType.CUSTOM, name: 'stepwise.run_ended', value: { status: 'succeeded', result: { response: 'Done.', actionsTaken: [] } } }),
    ]);
    const summary = out.map((event) => {
      const artifact = event.artifactUpdate as { artifact: { artifactId: string; parts: { text: string }[] }; append?: boolean; lastChunk?: boolean } | undefined;
      if (artifact) return `artifact ${artifact.artifact.artifactId} ${JSON.stringify(artifact.artifact.parts[0]?.text)}${artifact.append ? ' append' : ''}${artifact.lastChunk ? ' last' : ''}`;
      return `status ${(event.statusUpdate as { status: { state: string } }).status.state}`;
    });
    expect(summary).toEqual([
      'artifact m "Writ"',
      'artifact m "ing." append',
      'artifact m "" append last',
      'status TASK_STATE_INPUT_REQUIRED',
      'status TASK_STATE_INPUT_REQUIRED',
      'status TASK_STATE_INPUT_REQUIRED',
      'status TASK_STATE_WORKING',
      'artifact result "Done." last',
      'status TASK_STATE_COMPLETED',
    ]);
  });

  it('ends failed with the error, and cancelled as canceled', () => {
    const end = (value: unknown) => wire(new TaskEvents({ runId: 'run-1' }).next({ type: EventType.CUSTOM, name: 'stepwise.run_ended', value }));
    expect(end({ status: 'failed', error: { code: 'BudgetExceeded', message: 'Spent $1.00.' } })).toEqual([
      {
        statusUpdate: expect.objectContaining({
          taskId: 'run-1',
          contextId: 'run-1',
          status: expect.objectContaining({ state: 'TASK_STATE_FAILED', message: expect.objectContaining({ parts: [{ text: 'BudgetExceeded: Spent $1.00.', mediaType: 'text/plain' }] }) }),
        }),
      },
    ]);
    expect(end({ status: 'cancelled' })[0]).toMatchObject({ statusUpdate: { status: { state: 'TASK_STATE_CANCELED' } } });
  });
});

describe('POST /a2a on the run routes (JSON-RPC, in memory)', () => {
  const rpc = (api: ReturnType<typeof memoryApi>, method: string, params: unknown, headers: Record<string, string> = {}) =>
    api.request('POST', '/a2a', { jsonrpc: '2.0', id: 7, method, params }, { 'A2A-Version': '1.0', ...headers });
  const sendParams = (text: string, fields: Record<string, unknown> = {}) => ({
    message: { messageId: 'msg-1', role: 'ROLE_USER', parts: [{ text }], ...fields },
    configuration: { returnImmediately: true },
  });

  it('starts one run per message id: a repeat answers the same task', async () => {
    const api = memoryApi();
    const first = await rpc(api, 'SendMessage', sendParams('Add 2 and 3.'));
    const again = await rpc(api, 'SendMessage', sendParams('Add 2 and 3.'));
    expect(first.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { task: { id: 'run-1', status: { state: 'TASK_STATE_WORKING' } } } });
    expect((again.body.result as { task: { id: string; contextId: string } }).task).toMatchObject({ id: 'run-1', contextId: (first.body.result as { task: { contextId: string } }).task.contextId });
    expect(api.starter.started.map((s) => s.runId)).toEqual(['run-1']);
  });

  it("refuses an invalid message naming the message's field, and writes nothing", async () => {
    const api = memoryApi();
    const empty = await rpc(api, 'SendMessage', sendParams(' '));
    expect(empty.body).toMatchObject({ error: { code: -32602, message: expect.stringContaining('message.parts: must not be empty') } });
    const workflowInContext = await rpc(api, 'SendMessage', sendParams('Build it.', { contextId: 'c-1', metadata: { workflow: 'plan-and-build' } }));
    expect(workflowInContext.body).toMatchObject({ error: { code: -32602, message: expect.stringContaining('message.contextId:') } });
    expect(api.writes()).toBe(0);
  });

  it('keeps the code of a refusal A2A has no name for (a quota), cancels a running task, and answers a cancel of a completed one as not cancelable', async () => {
    const api = memoryApi({ maxRunningRuns: 1 });
    await rpc(api, 'SendMessage', sendParams('One.'));
    const second = await rpc(api, 'SendMessage', { ...sendParams('Two.'), message: { messageId: 'msg-2', role: 'ROLE_USER', parts: [{ text: 'Two.' }] } });
    expect(second.body).toMatchObject({ error: { code: -32000, message: expect.stringMatching(/^TooManyRuns: /) } });
    expect((await rpc(api, 'CancelTask', { id: 'run-1' })).body).toMatchObject({ result: { id: 'run-1', status: { state: 'TASK_STATE_CANCELED' } } });
    expect(api.starter.stopped).toEqual(['run-1']);
    const third = await rpc(api, 'SendMessage', { ...sendParams('Three.'), message: { messageId: 'msg-3', role: 'ROLE_USER', parts: [{ text: 'Three.' }] } });
    const id = (third.body.result as { task: { id: string } }).task.id;
    const done = api.runs.runs.get(id);
    if (done) api.runs.runs.set(id, { ...done, status: 'succeeded', phase: 'complete', result: { response: '3', actionsTaken: [] } });
    expect((await rpc(api, 'CancelTask', { id })).body).toMatchObject({ error: { code: -32002 } });
  });

  it("answers another caller's task, and a missing one, as not found; a client of another protocol version is refused", async () => {
    const api = memoryApi();
    await rpc(api, 'SendMessage', sendParams('Mine.'), as('ana'));
    for (const [method, params] of [['GetTask', { id: 'run-1' }], ['CancelTask', { id: 'run-1' }], ['SubscribeToTask', { id: 'run-1' }], ['GetTask', { id: 'run-9' }]] as const) {
      expect((await rpc(api, method, params, as('bob'))).body).toMatchObject({ error: { code: -32001, message: `No task ${params.id}.` } });
    }
    expect((await rpc(api, 'GetTask', { id: 'run-1' }, as('ana'))).body).toMatchObject({ result: { id: 'run-1' } });
    expect((await rpc(api, 'GetTask', { id: 'run-1' }, { ...as('ana'), 'A2A-Version': '0.3' })).body).toMatchObject({ error: { code: -32009 } });
  });
});

describe('POST /a2a under IAM auth (deployed: the caller is in the Lambda event, not a header)', () => {
  it('calls the run routes as the signed principal: its own task is found, another principal\'s is not', async () => {
    const api = memoryApi({ authenticate: iamCallers({}) });
    const as = (userArn: string) => ({ event: { requestContext: { authorizer: { iam: { userArn } } } } });
    const rpc = (method: string, params: unknown, userArn: string) =>
      api.app.request('/a2a', { method: 'POST', headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) }, as(userArn));
    const alice = 'arn:aws:iam::111122223333:user/alice';
    const sent = await rpc('SendMessage', { message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'Hi.' }] }, configuration: { returnImmediately: true } }, alice);
    expect(await sent.json()).toMatchObject({ result: { task: { id: 'run-1' } } });
    expect((await api.runs.get('run-1'))?.owner).toEqual({ principal: alice });
    expect(await (await rpc('GetTask', { id: 'run-1' }, alice)).json()).toMatchObject({ result: { id: 'run-1' } });
    expect(await (await rpc('GetTask', { id: 'run-1' }, 'arn:aws:iam::111122223333:user/bob')).json()).toMatchObject({ error: { code: -32001 } });
  });
});
