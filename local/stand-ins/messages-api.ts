/**
 * A local HTTP server that speaks the Anthropic Messages API (`POST /v1/messages`, JSON) and
 * answers with scripted turns or scripted failures, so the real SDK can be exercised over real
 * HTTP without a network: status codes, `retry-after`, dropped connections and slow answers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toolUses } from '../../functions/core/messages.js';
import { type ScriptedTurn, estimateTokens, scriptTurn } from '../../functions/adapters/model/scripted.js';
import { startLoopbackServer } from './http-server.js';

/** One scripted answer to one request. */
export type Reply =
  | { turn: ScriptedTurn; delayMs?: number }
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
 * may overlap and a retried step gets its turn again. Past the script's end, a 500 that says so.
 */
export function replayedScript(script: readonly ScriptedTurn[]): Responder {
  return (body) => {
    const turn = scriptTurn(script, body);
    return turn ? { turn } : { status: 500, type: 'api_error', message: 'The local script has no turn left for this run.' };
  };
}

export interface MessagesApiOptions {
  /**
   * Refuse requests estimated (4 characters a token, system and tools included) above this many
   * tokens, as the API does: 400 `prompt is too long: N tokens > W maximum`.
   */
  contextWindowTokens?: number;
}

/** Starts the local Messages API on loopback (`port` 0 picks a free one). */
export async function startMessagesApi(respond: Responder, port = 0, options: MessagesApiOptions = {}): Promise<MessagesApi> {
  const requests: WireRequest[] = [];
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
    if (body.stream) {
      send(res, 400, errorBody('invalid_request_error', 'The local Messages API answers only non-streaming requests.'));
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
    const reply = await respond(body, requests.length - 1);
    if ('drop' in reply) {
      req.socket.destroy();
      return;
    }
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if ('turn' in reply) {
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
  return { url: server.url, requests, headers, close: server.close };
}

/** The Messages API's answer to `request` with a scripted turn (the Bedrock stand-in sends the same body). */
export function messageBody(request: WireRequest, turn: ScriptedTurn, n: number): Record<string, unknown> {
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
      input_tokens: turn.usage?.inputTokens ?? estimateTokens(JSON.stringify([request.system, request.tools, request.messages])),
      output_tokens: turn.usage?.outputTokens ?? estimateTokens(JSON.stringify(turn.content)),
      cache_read_input_tokens: turn.usage?.cacheReadInputTokens ?? 0,
      cache_creation_input_tokens: turn.usage?.cacheCreationInputTokens ?? 0,
    },
  };
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
