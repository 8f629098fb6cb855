/** Stepwise as an A2A agent, driven by the A2A SDK's own client against the local server (docs/a2a.md). */
import { type Message, Role, type StreamResponse, TaskState } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { describe, expect, it } from 'vitest';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

// Every write waits for a reviewer here: the way a task comes to need input.
const local = useLocalStack({}, { stackProps: { approvalTools: ['write_file'] } });

const client = () => new ClientFactory().createFromUrl(local.stack.url);

/** A user message of text parts, as a client writes one. */
function message(text: string, fields: Partial<Message> = {}): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...fields,
  };
}

const send = (text: string, returnImmediately = false) => ({
  tenant: '',
  message: message(text),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
  metadata: undefined,
});

const textOf = (parts: { content?: { $case: string; value?: unknown } }[] = []) => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

describe('the A2A agent', () => {
  it('describes the deployment in its card: the JSON-RPC interface on this origin, streaming, one skill per agent and workflow, an optional bearer token', async () => {
    const card = await (await client()).getAgentCard();
    expect(card.supportedInterfaces).toEqual([expect.objectContaining({ url: `${local.stack.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' })]);
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.skills.map((s) => s.id)).toEqual(['assistant', 'plan-and-build']);
    expect(card.securityRequirements.map((r) => Object.keys(r.schemes))).toEqual([[], ['bearer']]);
  });

  it('answers a message with the completed task: the run, its answer as the result artifact, its session as the context', async () => {
    const tag = local.book.add('a2a-send', { turn: say('Paris.') });
    const task = await (await client()).sendMessage(send(`${tag} What is the capital of France?`));
    expect('id' in task && task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    if (!('id' in task)) return;
    expect(task.artifacts.map((a) => [a.artifactId, textOf(a.parts)])).toEqual([['result', 'Paris.']]);
    // A task is a run: the run routes show it, in the session the context names.
    const run = await local.get(`/runs/${task.id}`);
    expect(run.body).toMatchObject({ status: 'succeeded', sessionId: task.contextId, goal: `${tag} What is the capital of France?`, agent: { name: 'assistant' } });
    const got = await (await client()).getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect([got.status?.state, textOf(got.status?.message?.parts), textOf(got.history[0]?.parts)]).toEqual([TaskState.TASK_STATE_COMPLETED, 'Paris.', `${tag} What is the capital of France?`]);
  });

  it('streams a run to completion through a wait for a reviewer: the task, input-required, working again once approved, the text as written, the result, completed', async () => {
    const tag = local.book.add('a2a-stream', { turn: use(['toolu_r', 'write_file', { path: 'r.md', content: 'R' }]) }, { turn: say('Written.') });
    const events: StreamResponse[] = [];
    const states: TaskState[] = [];
    for await (const event of (await client()).sendMessageStream(send(`${tag} Write r.md.`))) {
      events.push(event);
      if (event.payload?.$case !== 'statusUpdate' || event.payload.value.status === undefined) continue;
      const { state } = event.payload.value.status;
      if (state !== states.at(-1)) states.push(state);
      // The stream stays open while a reviewer decides, here through the HTTP API.
      if (state === TaskState.TASK_STATE_INPUT_REQUIRED) expect((await local.post(`/runs/${event.payload.value.taskId}/approvals/toolu_r`, { decision: 'approve' })).status).toBe(202);
    }
    expect(events[0]?.payload?.$case).toBe('task');
    expect(states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]);
    const artifacts = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' && e.payload.value.artifact ? [e.payload.value.artifact] : []));
    expect(artifacts.filter((a) => a.name === 'text').map((a) => textOf(a.parts)).join('')).toBe('Written.');
    expect(artifacts.filter((a) => a.artifactId === 'result').map((a) => textOf(a.parts))).toEqual(['Written.']);
    const tools = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value.metadata?.stepwise?.toolCall?.tool] : [])).filter(Boolean);
    expect(tools).toEqual(['write_file']);
  });

  it('shows a run that waits for a reviewer as input-required, hides it from another caller, and cancels it', async () => {
    const tag = local.book.add('a2a-wait', { turn: use(['toolu_w', 'write_file', { path: 'a.md', content: 'A' }]) });
    const a2a = await client();
    // A blocking send returns once the task needs input.
    const task = await a2a.sendMessage(send(`${tag} Write a.md.`));
    if (!('id' in task)) throw new Error('expected a task');
    expect([task.status?.state, textOf(task.status?.message?.parts)]).toEqual([TaskState.TASK_STATE_INPUT_REQUIRED, expect.stringContaining('write_file (toolu_w)')]);

    const { token } = (await local.post('/_local/tokens', { sub: 'mallory' })).body as { token: string };
    const asMallory = { serviceParameters: { authorization: `Bearer ${token}` } };
    await expect(a2a.getTask({ tenant: '', id: task.id, historyLength: undefined }, asMallory)).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(a2a.cancelTask({ tenant: '', id: task.id, metadata: undefined }, asMallory)).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(a2a.getTask({ tenant: '', id: 'no-such-run', historyLength: undefined })).rejects.toBeInstanceOf(TaskNotFoundError);

    const cancelled = await a2a.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await local.waitFor(task.id)).status).toBe('cancelled');
    // Subscribing to a task that has ended gives the task as it is, and ends.
    const resubscribed: StreamResponse[] = [];
    for await (const event of a2a.resubscribeTask({ tenant: '', id: task.id })) resubscribed.push(event);
    expect(resubscribed.map((e) => (e.payload?.$case === 'task' ? e.payload.value.status?.state : e.payload?.$case))).toEqual([TaskState.TASK_STATE_CANCELED]);
  });
});
