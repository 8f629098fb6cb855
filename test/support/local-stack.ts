/**
 * The whole local stack for one test file: a Messages API (or the Bedrock stand-in) that answers
 * from per-run scripts, the emulators, the local runtime (retry waits shortened) and the HTTP API.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Run } from '../../functions/core/runs/types.js';
import type { RunView } from '../../functions/api/schemas.js';
import { startBedrockApi } from '../../local/stand-ins/bedrock-api.js';
import {
  type MessagesApi,
  type MessagesApiOptions,
  type Reply,
  type Responder,
  type WireRequest,
  startMessagesApi,
} from '../../local/stand-ins/messages-api.js';
import { type LocalStack, type LocalStackOptions, startLocalStack } from '../../local/stack.js';

/** Scripts keyed by a tag that the run's goal carries as `[[tag]]`, so runs can proceed at once. */
export class ScriptBook {
  private readonly scripts = new Map<string, Reply[]>();
  private readonly responders = new Map<string, (body: WireRequest, n: number) => Reply | Promise<Reply>>();
  /** Requests received, by tag. */
  readonly requests = new Map<string, WireRequest[]>();

  add(tag: string, ...replies: Reply[]): string {
    this.scripts.set(tag, replies);
    this.requests.set(tag, []);
    return `[[${tag}]]`;
  }

  /** Answers a tag's requests with a function of the request and its number (0, 1, …), which may wait. */
  respondWith(tag: string, responder: (body: WireRequest, n: number) => Reply | Promise<Reply>): string {
    this.responders.set(tag, responder);
    this.requests.set(tag, []);
    return `[[${tag}]]`;
  }

  respond = (body: WireRequest): Reply | Promise<Reply> => {
    const first = JSON.stringify(body.messages[0]?.content ?? '');
    const tag = /\[\[([\w-]+)\]\]/.exec(first)?.[1];
    const responder = tag ? this.responders.get(tag) : undefined;
    if (tag && responder) {
      const seen = this.requests.get(tag) ?? [];
      seen.push(body);
      return responder(body, seen.length - 1);
    }
    const queue = tag ? this.scripts.get(tag) : undefined;
    if (!tag || !queue) return { status: 400, type: 'invalid_request_error', message: `No script for this request (${tag ?? 'untagged'}).` };
    this.requests.get(tag)?.push(body);
    return queue.shift() ?? { status: 500, type: 'api_error', message: `Script ${tag} has no reply left.` };
  };
}

export interface StackFixture {
  stack: LocalStack;
  messages: MessagesApi;
  book: ScriptBook;
  post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  /** Any request, as the caller a token names (the local caller without one). */
  request(method: string, path: string, options?: { body?: unknown; token?: string }): Promise<{ status: number; body: Record<string, unknown> }>;
  get(path: string): Promise<{ status: number; body: Record<string, unknown> }>;
  /** Starts a single-mode run and waits until it stops running. */
  run(goal: string, extra?: Record<string, unknown>): Promise<Run>;
  /** Polls the run until it stops running, then (unless `idle: false`, when another run waits on purpose) until the stack is idle. */
  waitFor(runId: string, timeoutMs?: number, options?: { idle?: boolean }): Promise<Run>;
  /** Polls the run, read as the caller `token` names (the local caller without one), until `count` calls wait for a decision, each on a task token. */
  waitingOn(runId: string, count: number, options?: { token?: string }): Promise<RunView>;
}

export interface FixtureOptions extends Pick<LocalStackOptions, 'wrapHandler' | 'stackProps' | 'functions' | 'schedules'> {
  messagesApi?: MessagesApiOptions;
  /** Answers the model's requests instead of the tagged scripts (the offline model, as `npm run dev` serves it). */
  respond?: Responder;
  /** `bedrock`: the scripts are served by the local Bedrock stand-in, and no API key is set. @default 'anthropic' */
  provider?: 'anthropic' | 'bedrock';
}

/** The fixture without test hooks (the bench): start it, use it, close it. */
export async function startFixture(env: Record<string, string> = {}, options: FixtureOptions = {}): Promise<StackFixture & { close(): Promise<void> }> {
  const fixture = { book: new ScriptBook() } as StackFixture & { close(): Promise<void> };
  await openFixture(fixture, env, options);
  fixture.close = async () => {
    await fixture.stack?.close();
    await fixture.messages?.close();
  };
  return fixture;
}

export function useLocalStack(env: Record<string, string> = {}, options: FixtureOptions = {}): StackFixture {
  const fixture = { book: new ScriptBook() } as StackFixture;
  beforeAll(() => openFixture(fixture, env, options), 120_000);
  afterAll(async () => {
    await fixture.stack?.close();
    await fixture.messages?.close();
  });
  return fixture;
}

/** Starts the Messages API (or Bedrock stand-in) and the stack, and fills in the fixture's helpers. */
async function openFixture(fixture: StackFixture, env: Record<string, string>, options: FixtureOptions): Promise<void> {
  const { messagesApi, provider = 'anthropic', respond = fixture.book.respond, ...stackOptions } = options;
  fixture.messages = provider === 'bedrock' ? await startBedrockApi(respond) : await startMessagesApi(respond, 0, messagesApi);
  const model =
    provider === 'bedrock'
      ? { STEPWISE_PROVIDER: 'bedrock', STEPWISE_BEDROCK_ENDPOINT: fixture.messages.url, STEPWISE_MODEL: 'anthropic.claude-test-v1:0' }
      : { STEPWISE_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: fixture.messages.url, STEPWISE_MODEL: 'claude-test' };
  fixture.stack = await startLocalStack({
    port: 0,
    retryIntervalMs: 5,
    ...stackOptions,
    env: { ...model, ...env },
  });
  const call = async (method: string, path: string, body?: unknown, token?: string) => {
    const headers = {
      // Every state change is JSON, as the CLI and the console send it (the local server refuses any other).
      ...(body !== undefined || method !== 'GET' ? { 'content-type': 'application/json' } : {}),
      ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
    };
    const res = await fetch(`${fixture.stack.url}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  };
  fixture.post = (path, body) => call('POST', path, body);
  fixture.request = (method, path, { body, token } = {}) => call(method, path, body, token);
  fixture.get = (path) => call('GET', path);
  fixture.waitFor = async (runId, timeoutMs = 60_000, { idle = true } = {}) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { body } = await fixture.get(`/runs/${runId}`);
      if (body.status !== 'running') {
        if (!idle) return body as unknown as Run;
        await fixture.stack.runtime.idle();
        return (await fixture.get(`/runs/${runId}`)).body as unknown as Run;
      }
      if (Date.now() > deadline) throw new Error(`Run ${runId} is still running after ${timeoutMs} ms.`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  fixture.waitingOn = async (runId, count, { token } = {}) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const run = (await fixture.request('GET', `/runs/${runId}`, token ? { token } : {})).body as unknown as RunView;
      const tokens = fixture.stack.runtime.waitingTokens().filter((t) => t.executionArn.includes(runId));
      if (run.waitingFor.length === count && tokens.length === count) return run;
      if (run.status !== 'running' || Date.now() > deadline) {
        throw new Error(`Run ${runId} is ${run.status}, waiting for ${JSON.stringify(run.waitingFor)}; expected ${count} waits.`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  fixture.run = async (goal, extra = {}) => {
    const started = await fixture.post('/runs', { goal, mode: 'single', ...extra });
    if (started.status !== 202) throw new Error(`POST /runs answered ${started.status}: ${JSON.stringify(started.body)}`);
    return fixture.waitFor(String(started.body.runId));
  };
}
