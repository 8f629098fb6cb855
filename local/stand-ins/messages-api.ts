/**
 * A local HTTP server that speaks the Anthropic Messages API (`POST /v1/messages`, JSON, or
 * server-sent events when the request says `stream: true`) and answers with scripted turns or
 * scripted failures, so the real SDK can be exercised over real HTTP without a network: status
 * codes, `retry-after`, dropped connections, slow answers, and streams that come slowly (a
 * turn's `pacing`) or break off (a reply's `cut`).
 *
 * A request's `context_management` (`clear_tool_uses_20250919`) is honoured as the API documents
 * it (`promptOf`): the scripted model reads the prompt with the old tool results cleared, its
 * input tokens are counted after clearing, and the answer reports `applied_edits`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as z from 'zod';
import { type AppliedClearing, clearToolResults } from '../../functions/core/compaction/clearing.js';
import type { ContextEditing } from '../../functions/core/compaction/types.js';
import { toolUses } from '../../functions/core/model/messages.js';
import { type ScriptedTurn, estimateTokens, pieces, runOf, scriptPosition, scriptTurn } from '../../functions/adapters/model/scripted.js';
import { startLoopbackServer } from './http-server.js';

/** Where a streamed answer stops short: after `afterDeltas` content deltas. */
export interface StreamCut {
  afterDeltas: number;
  /** Sent as the stream's `error` event (as the API reports overloading mid-way); without it, the connection is dropped. */
  error?: { type: string; message: string };
}

/** One scripted answer to one request. */
export type Reply =
  | { turn: ScriptedTurn; delayMs?: number; cut?: StreamCut }
  | { status: number; type: string; message: string; headers?: Record<string, string>; delayMs?: number }
  | { drop: true };

export type Responder = (body: WireRequest, index: number) => Reply | Promise<Reply>;

export interface WireRequest {
  model: string;
  max_tokens: number;
  system?: unknown;
  tools?: unknown[];
  messages: { role: string; content: unknown }[];
  [key: string]: unknown;
}

export interface MessagesApi {
  url: string;
  /** Request bodies received, in order. */
  requests: WireRequest[];
  /** What the model read of each request: its body after context editing, in order. */
  prompts: WireRequest[];
  /** Request headers received, in order. */
  headers: IncomingMessage['headers'][];
  close(): Promise<void>;
}

/** Replies taken from a list in order; past its end, a 500 that says the script ran out. */
export function scriptedReplies(replies: Reply[]): Responder {
  const queue = [...replies];
  return () =>
    queue.shift() ?? { status: 500, type: 'api_error', message: 'The local script has no reply left for this request.' };
}

/**
 * A script replayed for every run from its first turn (`STEPWISE_SCRIPT`): each request is
 * answered with the turn its run has reached, read from the request (`scriptPosition`), so runs
 * may overlap and a retried step gets its turn again. Past the script's end, a 400 (a client
 * error: not retried) naming the run and the turn it asked for.
 */
export function replayedScript(script: readonly ScriptedTurn[], name = 'The script'): Responder {
  return (body) => {
    const turn = scriptTurn(script, body);
    if (turn) return { turn };
    const asked = scriptPosition(script, body) + 1;
    return { status: 400, type: 'invalid_request_error', message: `${name} has no turn for ${runOf(body)}: it asked for turn ${asked}, past its ${script.length}.` };
  };
}

export interface MessagesApiOptions {
  /**
   * Refuse requests estimated (4 characters a token, system and tools included) above this many
   * tokens, as the API does: 400 `prompt is too long: N tokens > W maximum`.
   */
  contextWindowTokens?: number;
  /** Told of every text delta as it is sent (the bench times the bytes from here to a watcher). */
  onTextDelta?: (text: string, sentAt: number) => void;
}

/** Starts the local Messages API on loopback (`port` 0 picks a free one). */
export async function startMessagesApi(respond: Responder, port = 0, options: MessagesApiOptions = {}): Promise<MessagesApi> {
  const requests: WireRequest[] = [];
  const prompts: WireRequest[] = [];
  const headers: IncomingMessage['headers'][] = [];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
      send(res, 404, errorBody('not_found_error', `No route ${req.method} ${req.url}`));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: WireRequest;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as WireRequest;
    } catch {
      send(res, 400, errorBody('invalid_request_error', 'The request body is not JSON.'));
      return;
    }
    requests.push(body);
    headers.push(req.headers);
    const size = estimateTokens(JSON.stringify([body.system, body.tools, body.messages]));
    if (options.contextWindowTokens !== undefined && size + body.max_tokens > options.contextWindowTokens) {
      const message = `prompt is too long: ${size} tokens > ${options.contextWindowTokens - body.max_tokens} maximum`;
      send(res, 400, errorBody('invalid_request_error', message));
      return;
    }
    prompts.push(promptOf(body).prompt);
    const reply = await respond(prompts.at(-1) ?? body, requests.length - 1);
    if ('drop' in reply) {
      req.socket.destroy();
      return;
    }
    if (reply.delayMs) await sleep(reply.delayMs);
    if ('turn' in reply && body.stream) {
      const events = streamEvents(messageBody(body, reply.turn, requests.length), reply.turn);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': `req_local_${Date.now()}` });
      await playStream(events, reply.turn, reply.cut, {
        write: (event) => {
          res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
          const delta = (event as { delta?: { type?: string; text?: string } }).delta;
          if (options.onTextDelta && delta?.type === 'text_delta' && delta.text) options.onTextDelta(delta.text, performance.now());
        },
        fail: (error) => res.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error })}\n\n`),
        drop: () => req.socket.destroy(),
        closed: () => res.destroyed,
      });
      if (!res.destroyed) res.end();
    } else if ('turn' in reply) {
      // Not streamed: the answer comes whole when a streamed one would have ended.
      await sleep(generationMs(reply.turn));
      send(res, 200, messageBody(body, reply.turn, requests.length));
    } else {
      send(res, reply.status, errorBody(reply.type, reply.message), reply.headers);
    }
  }

  const server = await startLoopbackServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, errorBody('api_error', String(error)));
    });
  }, port);
  return { url: server.url, requests, prompts, headers, close: server.close };
}

/** The one context edit the stand-ins know, as a request names it. */
const ClearToolUsesEdit = z.looseObject({
  type: z.literal('clear_tool_uses_20250919'),
  trigger: z.object({ type: z.literal('input_tokens'), value: z.number().int().positive() }).optional(),
  keep: z.object({ type: z.literal('tool_uses'), value: z.number().int().nonnegative() }).optional(),
  clear_at_least: z.object({ type: z.literal('input_tokens'), value: z.number().int().positive() }).nullish(),
  exclude_tools: z.array(z.string()).nullish(),
});
const ContextManagement = z.object({ edits: z.array(z.unknown()).optional() });

/** The request's tool-clearing edit as settings, with the API's defaults (100K tokens, keep 3). */
function editOf(request: WireRequest): ContextEditing | undefined {
  const config = ContextManagement.safeParse(request.context_management);
  const edit = config.success ? (config.data.edits ?? []).map((e) => ClearToolUsesEdit.safeParse(e)).find((e) => e.success)?.data : undefined;
  if (!edit) return undefined;
  return {
    triggerTokens: edit.trigger?.value ?? 100_000,
    keepToolUses: edit.keep?.value ?? 3,
    ...(edit.clear_at_least ? { clearAtLeastTokens: edit.clear_at_least.value } : {}),
    ...(edit.exclude_tools ? { excludeTools: edit.exclude_tools } : {}),
  };
}

/** A request's size in tokens as the stand-ins count it: system prompt, tools and messages (4 characters a token). */
export function promptTokens(request: WireRequest): number {
  return estimateTokens(JSON.stringify([request.system, request.tools, request.messages]));
}

/** What the model reads of `request`: its messages after context editing, and what the editing cleared. */
export function promptOf(request: WireRequest): { prompt: WireRequest; applied?: AppliedClearing } {
  const edit = editOf(request);
  if (!edit) return { prompt: request };
  const { messages, applied } = clearToolResults(request.messages, edit, promptTokens(request));
  return applied ? { prompt: { ...request, messages }, applied } : { prompt: request };
}

/** The Messages API's answer to `request` with a scripted turn (the Bedrock stand-in sends the same body). */
export function messageBody(received: WireRequest, turn: ScriptedTurn, n: number): Record<string, unknown> {
  const { prompt: request, applied } = promptOf(received);
  const edits = applied ? [{ type: 'clear_tool_uses_20250919', cleared_tool_uses: applied.clearedToolUses, cleared_input_tokens: applied.clearedInputTokens }] : [];
  return {
    id: `msg_local_${n}`,
    type: 'message',
    role: 'assistant',
    model: request.model,
    content: turn.content,
    stop_reason: turn.stopReason ?? (toolUses(turn).length > 0 ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    usage: {
      // Like the API: system prompt and tool definitions count as input too.
      input_tokens: turn.usage?.inputTokens ?? promptTokens(request),
      output_tokens: turn.usage?.outputTokens ?? estimateTokens(JSON.stringify(turn.content)),
      cache_read_input_tokens: turn.usage?.cacheReadInputTokens ?? 0,
      cache_creation_input_tokens: turn.usage?.cacheCreationInputTokens ?? 0,
    },
    ...(editOf(received) ? { context_management: { applied_edits: edits } } : {}),
  };
}

/** A stream event of the Messages API, and whether it is a content delta (the ones a turn's pacing spaces out). */
export interface StreamEvent {
  data: Record<string, unknown>;
  delta: boolean;
}

/**
 * The answer `message` (a `messageBody`) as the Messages API streams it: `message_start`, per
 * block `content_block_start`, its deltas (`text_delta`, `input_json_delta`, `thinking_delta`
 * and `signature_delta`) and `content_block_stop`, then `message_delta` and `message_stop`. A
 * block of another type comes whole in its `content_block_start`. The SDK's accumulator builds
 * `message` back from these events exactly.
 */
export function streamEvents(message: Record<string, unknown>, turn: ScriptedTurn): StreamEvent[] {
  const { content: _content, stop_reason, stop_sequence, usage, ...rest } = message;
  const { output_tokens, ...input } = usage as Record<string, unknown>;
  const event = (data: Record<string, unknown>, delta = false): StreamEvent => ({ data, delta });
  const events = [event({ type: 'message_start', message: { ...rest, content: [], stop_reason: null, stop_sequence: null, usage: { ...input, output_tokens: 1 } } })];
  for (const [index, block] of turn.content.entries()) {
    const deltas: Record<string, unknown>[] = [];
    let start: Record<string, unknown> = block;
    if (block.type === 'text' && typeof block.text === 'string') {
      start = { ...block, text: '' };
      for (const text of pieces(block.text, turn.pacing)) deltas.push({ type: 'text_delta', text });
    } else if (block.type === 'tool_use') {
      start = { ...block, input: {} };
      for (const partial_json of pieces(JSON.stringify(block.input ?? {}), turn.pacing)) deltas.push({ type: 'input_json_delta', partial_json });
    } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
      start = { ...block, thinking: '', ...(typeof block.signature === 'string' ? { signature: '' } : {}) };
      if (block.thinking) deltas.push({ type: 'thinking_delta', thinking: block.thinking });
      if (typeof block.signature === 'string') deltas.push({ type: 'signature_delta', signature: block.signature });
    }
    events.push(event({ type: 'content_block_start', index, content_block: start }));
    for (const delta of deltas) {
      const paced = delta.type === 'text_delta' || delta.type === 'input_json_delta';
      events.push(event({ type: 'content_block_delta', index, delta }, paced));
    }
    events.push(event({ type: 'content_block_stop', index }));
  }
  events.push(event({ type: 'message_delta', delta: { stop_reason, stop_sequence }, usage: { output_tokens } }));
  events.push(event({ type: 'message_stop' }));
  return events;
}

/** How a stand-in sends the events of a stream. */
export interface StreamSink {
  write(event: Record<string, unknown>): void;
  /** Ends the stream with an error event. */
  fail(error: { type: string; message: string }): void;
  /** Drops the connection. */
  drop(): void;
  /** Whether the client went away. */
  closed(): boolean;
}

/** Sends `events` at the turn's pace (`delayMs` before each content delta), stopping where `cut` says. */
export async function playStream(events: StreamEvent[], turn: ScriptedTurn, cut: StreamCut | undefined, sink: StreamSink): Promise<void> {
  const delayMs = turn.pacing?.delayMs ?? 0;
  let deltas = 0;
  for (const { data, delta } of events) {
    if (sink.closed()) return;
    if (delta) {
      if (cut && deltas >= cut.afterDeltas) {
        if (cut.error) sink.fail(cut.error);
        else sink.drop();
        return;
      }
      deltas++;
      if (delayMs) await sleep(delayMs);
      if (sink.closed()) return;
    }
    sink.write(data);
  }
}

/** How long a turn takes to generate at its pace: `delayMs` per content delta. */
export function generationMs(turn: ScriptedTurn): number {
  const delayMs = turn.pacing?.delayMs ?? 0;
  if (!delayMs) return 0;
  return streamEvents({ usage: {} }, turn).filter((e) => e.delta).length * delayMs;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorBody(type: string, message: string): Record<string, unknown> {
  return { type: 'error', error: { type, message } };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': `req_local_${Date.now()}`,
    ...headers,
  });
  res.end(text);
}
