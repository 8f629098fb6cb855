/**
 * The A2A request handler on Stepwise's own routes (docs/a2a.md): every method is one or two
 * requests to the HTTP API, made in-process with the caller's own credentials, so the callers,
 * owners, roles, quotas and budgets of every route hold here by the same code (a task of another
 * caller is "task not found", as its run is a 404). A task is a run: no task store of its own, and
 * nothing kept between requests, so any function instance answers any request.
 */
import type { AGUIEvent } from '@ag-ui/core';
import { type AgentCard, type CancelTaskRequest, type GetTaskRequest, type SendMessageRequest, type StreamResponse, type SubscribeToTaskRequest, type Task, TaskState } from '@a2a-js/sdk';
import {
  ExtendedAgentCardNotConfiguredError,
  JsonRpcTransportError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { EventSourceMessage } from 'eventsource-parser';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { Accepted, ErrorBody, RunView } from '../schemas.js';
import { EventsPage } from '../stream.js';
import { type RunRequest, TaskEvents, contextOf, finalStates, runRequestOf, taskOf } from './tasks.js';

/** A request to the HTTP API, in-process, as the caller of the A2A request. */
export type InProcessApi = (method: 'GET' | 'POST', path: string, options?: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal }) => Promise<Response>;

/** The JSON-RPC code of a refusal A2A has no name for (quotas, budgets, roles): the first of the implementation-defined server errors. */
export const stepwiseRefusalCode = -32000;

/** An idempotency key as `POST /runs` takes it: a message id that is one makes a repeated message start its run once. */
const idempotencyKey = /^[\x21-\x7e]{1,255}$/;

/** A2A's methods, answered by Stepwise's routes. */
export class StepwiseTasks implements A2ARequestHandler {
  constructor(
    private readonly card: AgentCard,
    private readonly api: InProcessApi,
  ) {}

  async getAgentCard(): Promise<AgentCard> {
    return this.card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError();
  }

  /** Starts the run and answers once it ends or waits for a reviewer (`input-required`), or at once with `returnImmediately`. */
  async sendMessage(params: SendMessageRequest): Promise<Task> {
    const runId = await this.start(params);
    if (!params.configuration?.returnImmediately) {
      for await (const event of this.follow(await this.run(runId), 'start')) {
        const state = event.payload?.$case === 'statusUpdate' ? event.payload.value.status?.state : undefined;
        if (state !== undefined && (finalStates.includes(state) || state === TaskState.TASK_STATE_INPUT_REQUIRED)) break;
      }
    }
    return taskOf(await this.run(runId));
  }

  /** Starts the run, then streams it: the task, then its events until it ends (through any wait for a reviewer). */
  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    yield* this.watch(await this.start(params), 'start');
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    const task = taskOf(await this.run(params.id));
    return params.historyLength === 0 ? { ...task, history: [] } : task;
  }

  /** Cancels the run as `POST /runs/{runId}/cancel` does: its owner or an admin of its tenant, a running run only. */
  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    const res = await this.api('POST', `/runs/${encodeURIComponent(params.id)}/cancel`);
    if (!res.ok) throw await refusal(res, params.id, { 409: (message) => new TaskNotCancelableError(message) });
    return taskOf(await this.run(params.id));
  }

  /** The task now, then what happens to it from now on, until it ends. */
  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    yield* this.watch(params.id, 'now');
  }

  async listTasks(): Promise<never> {
    throw new UnsupportedOperationError('ListTasks is not offered: GET /runs lists your runs.');
  }

  async createTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async getTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async listTaskPushNotificationConfigs(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async deleteTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  /** The run as the caller may see it: `GET /runs/{runId}`. */
  private async run(runId: string): Promise<RunView> {
    const res = await this.api('GET', `/runs/${encodeURIComponent(runId)}`);
    if (!res.ok) throw await refusal(res, runId);
    return RunView.parse(await res.json());
  }

  /** Starts the run a message asks for (`POST /runs`); a message to an existing task is refused (it is not found when the caller may not see it). */
  private async start(params: SendMessageRequest): Promise<string> {
    const message = params.message;
    if (!message) throw new RequestMalformedError('The request has no message.');
    if (message.taskId) {
      // A task is one run: a reviewer decides the calls it waits on (POST /runs/{runId}/approvals/{toolUseId}); a conversation goes on in a new task of its context.
      const run = await this.run(message.taskId);
      throw new UnsupportedOperationError(
        `Task ${run.runId} takes no more messages: send a new message in context ${contextOf(run)} to go on with the conversation; a call it waits on is decided at POST /runs/${run.runId}/approvals/{toolUseId}.`,
      );
    }
    const request = runRequestOf(message, params.metadata);
    const key = idempotencyKey.test(message.messageId) ? { 'Idempotency-Key': message.messageId } : undefined;
    const res = await this.api('POST', '/runs', { body: request.body, ...(key ? { headers: key } : {}) });
    if (!res.ok) throw await refusal(res, undefined, {}, request.fields);
    return Accepted.parse(await res.json()).runId;
  }

  /** The task as it is now, then its events until it ends. */
  private async *watch(runId: string, from: From): AsyncGenerator<StreamResponse, void, undefined> {
    const run = await this.run(runId);
    yield { payload: { $case: 'task', value: taskOf(run) } };
    yield* this.follow(run, from);
  }

  /**
   * The run's A2A events, from its event stream (`GET /runs/{runId}/events`, read in-process, which
   * holds one of the caller's stream slots while it lasts) until the run ends; a stream that ends
   * first (its longest duration) is resumed from its last event id. From `now`, what the stream
   * holds so far (`GET /runs/{runId}/events/page`) only tells which calls still wait.
   */
  private async *follow(run: RunView, from: From): AsyncGenerator<StreamResponse, void, undefined> {
    const events = new TaskEvents(run);
    const path = `/runs/${encodeURIComponent(run.runId)}/events`;
    let after: string | undefined;
    if (from === 'now') {
      const res = await this.api('GET', `${path}/page`);
      if (!res.ok) throw await refusal(res, run.runId);
      const page = EventsPage.parse(await res.json());
      for (const item of page.items) events.next(item.event as AGUIEvent);
      if (page.done) return;
      after = page.items.at(-1)?.id;
    }
    for (;;) {
      const res = await this.api('GET', path, after ? { headers: { 'Last-Event-ID': after } } : {});
      if (res.status === 204) return;
      if (!res.ok || !res.body) throw await refusal(res, run.runId);
      // Node's web streams are async-iterable; the global type TypeScript picks for them is not always.
      const frames = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()) as unknown as AsyncIterable<EventSourceMessage>;
      for await (const frame of frames) {
        if (frame.id) after = frame.id;
        for (const out of events.next(JSON.parse(frame.data) as AGUIEvent)) yield out;
        if (finalStates.includes(events.state)) return;
      }
    }
  }
}

/** Where following a run starts: at its first event (a run just started), or after what it has done so far. */
type From = 'start' | 'now';

/**
 * A refusal of the HTTP API as an A2A error: a run the caller may not see (or none) is "task not
 * found", an invalid request "malformed" with each field named as the message names it (`fields`),
 * and a refusal A2A has no name for (`TooManyRuns`, `BudgetExceeded`, `TooManyStreams`,
 * `Forbidden`, a busy session) keeps its code in the message, under `stepwiseRefusalCode`.
 */
async function refusal(
  res: Response,
  taskId: string | undefined,
  named: Partial<Record<number, (message: string) => Error>> = {},
  fields: RunRequest['fields'] = {},
): Promise<Error> {
  const parsed = ErrorBody.safeParse(await res.json().catch(() => undefined));
  const error = parsed.success ? parsed.data.error : { code: `Http${res.status}`, message: `The API answered ${res.status}.` };
  if (res.status === 404 && taskId !== undefined) return new TaskNotFoundError(`No task ${taskId}.`);
  const own = named[res.status];
  if (own) return own(error.message);
  if (res.status === 400) {
    const issues = (error.issues ?? []).map((issue) => `${fields[issue.path] ?? issue.path}: ${issue.message}`);
    return new RequestMalformedError(issues.length ? `Invalid request: ${issues.join('; ')}.` : error.message);
  }
  return new JsonRpcTransportError({ jsonrpc: '2.0', id: null, error: { code: stepwiseRefusalCode, message: `${error.code}: ${error.message}` } });
}
