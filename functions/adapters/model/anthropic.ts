/**
 * The `anthropic` model provider: the Messages API through `@anthropic-ai/sdk`.
 *
 * Failures become the named errors of `core/model/types.ts`, so the state machine's `Retry` can pick
 * the transient ones. The SDK's own retries are kept low for the same reason (invariant 3, docs/ARCHITECTURE.md).
 *
 * A request with `onProgress` is streamed: the SDK's accumulator (`finalMessage()`) builds the
 * answer from the stream's events, so what is stored is what a call without streaming returns
 * (thinking, redacted thinking and server-tool blocks included), while `onProgress` is told of
 * the text and tool input so far. A failure in the middle of a stream (an `error` event, a
 * dropped connection, an answer that outlasts `timeoutMs`) maps to the same named errors.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { BaseAnthropic } from '@anthropic-ai/sdk/client';
import { APIConnectionError, APIError } from '@anthropic-ai/sdk/core/error';
import { Messages } from '@anthropic-ai/sdk/resources/messages/messages';
import type { ContextEditing } from '../../core/compaction/types.js';
import { ContentBlock, type Message, StopReason } from '../../core/model/messages.js';
import { ContextWindowExceeded, type ModelProvider, type ModelRequest, ModelRequestInvalid, type ModelResponse, ModelOverloaded, ModelThrottled, ModelUnavailable, type PartialBlock } from '../../core/model/types.js';
import * as z from 'zod';

export interface AnthropicProviderOptions {
  /** The key, or a function that fetches it (from Secrets Manager when deployed), called once. */
  apiKey: string | (() => Promise<string>);
  /** Defaults to `ANTHROPIC_BASE_URL`, as the SDK does. */
  baseURL?: string;
  /**
   * Milliseconds for one HTTP attempt; must stay below the inference Lambda's timeout. A streamed
   * attempt gets this long to its last event (see `streamBudgetMs`).
   */
  timeoutMs?: number;
  maxRetries?: number;
}

const defaultTimeoutMs = 120_000;
const defaultMaxRetries = 1;

/**
 * How long a streamed call may take in all: what a call without streaming may, `timeoutMs` for
 * each attempt the SDK makes plus its backoff between them (0.5 s, doubling, at most 8 s). With
 * no SDK retry (deployed) that is `timeoutMs`, so timeouts still nest (invariant 3,
 * docs/ARCHITECTURE.md). The SDK's own timeout covers only an attempt's wait for the response's
 * headers, not the stream that follows.
 */
export function streamBudgetMs(timeoutMs: number, maxRetries: number): number {
  let backoff = 0;
  for (let retry = 0; retry < maxRetries; retry++) backoff += Math.min(500 * 2 ** retry, 8_000);
  return timeoutMs * (maxRetries + 1) + backoff;
}

const ephemeral = { type: 'ephemeral' } as const;

/**
 * The SDK's client with the Messages API alone: its whole \`Anthropic\` client constructs every
 * resource (models, files, beta, organization, …), about 300 KiB more in each function's bundle.
 */
class MessagesClient extends BaseAnthropic {
  readonly messages = new Messages(this);
}

export class AnthropicProvider implements ModelProvider {
  private client: Promise<MessagesClient> | undefined;

  constructor(private readonly options: AnthropicProviderOptions) {}

  private connect(): Promise<MessagesClient> {
    this.client ??= (async () => {
      const { apiKey } = this.options;
      return new MessagesClient({
        apiKey: typeof apiKey === 'string' ? apiKey : await apiKey(),
        ...(this.options.baseURL ? { baseURL: this.options.baseURL } : {}),
        timeout: this.options.timeoutMs ?? defaultTimeoutMs,
        maxRetries: this.options.maxRetries ?? defaultMaxRetries,
      });
    })().catch((error: unknown) => {
      this.client = undefined;
      throw new ModelUnavailable(`The Anthropic API key could not be read: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    });
    return this.client;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    const client = await this.connect();
    if (request.onProgress) {
      const budget = streamBudgetMs(this.options.timeoutMs ?? defaultTimeoutMs, this.options.maxRetries ?? defaultMaxRetries);
      return fromWire(await streamMessage(client.messages, toWire(request), request, budget, mapError));
    }
    let response: Anthropic.Message;
    try {
      response = await client.messages.create(toWire(request), {
        ...(request.signal ? { signal: request.signal } : {}),
        ...betaHeaders(request),
      });
    } catch (error) {
      throw mapError(error);
    }
    return fromWire(response);
  }
}

/**
 * One streamed call: the SDK's `MessageStream` accumulates the answer, each text and tool-input
 * delta is passed on to `request.onProgress`, and the whole call, retries included, must end
 * within `budgetMs` (`streamBudgetMs`). Shared by the providers that speak the Messages API
 * (Anthropic, Bedrock).
 */
export async function streamMessage(
  messages: Pick<Messages, 'stream'>,
  body: Anthropic.MessageCreateParamsNonStreaming,
  request: ModelRequest,
  budgetMs: number,
  mapFailure: (error: unknown) => Error,
): Promise<Anthropic.Message> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), budgetMs);
  const signal = request.signal ? AbortSignal.any([request.signal, deadline.signal]) : deadline.signal;
  const progress = new Progress(request.onProgress);
  try {
    const stream = messages.stream(body, { signal, ...betaHeaders(request) });
    stream.on('streamEvent', (event) => progress.add(event));
    return await stream.finalMessage();
  } catch (error) {
    if (deadline.signal.aborted && !request.signal?.aborted) {
      throw new ModelUnavailable(`The model did not finish its answer within ${budgetMs} ms.`, { cause: error });
    }
    throw mapFailure(error);
  } finally {
    clearTimeout(timer);
  }
}

/** The text and tool input of an answer so far, from its stream events. */
class Progress {
  private blocks: PartialBlock[] = [];

  constructor(private readonly onProgress: ModelRequest['onProgress']) {}

  add(event: Anthropic.MessageStreamEvent): void {
    if (!this.onProgress) return;
    if (event.type === 'content_block_start') {
      const block = event.content_block;
      if (block.type === 'text') this.blocks = [...this.blocks, { block: event.index, type: 'text', text: block.text }];
      else if (block.type === 'tool_use') this.blocks = [...this.blocks, { block: event.index, type: 'tool_use', id: block.id, name: block.name, partialJson: '' }];
      else return;
    } else if (event.type === 'content_block_delta') {
      const { delta } = event;
      const grown = this.blocks.map((b): PartialBlock => {
        if (b.block !== event.index) return b;
        if (b.type === 'text' && delta.type === 'text_delta') return { ...b, text: b.text + delta.text };
        if (b.type === 'tool_use' && delta.type === 'input_json_delta') return { ...b, partialJson: b.partialJson + delta.partial_json };
        return b;
      });
      if (grown.every((b, i) => b === this.blocks[i])) return;
      this.blocks = grown;
    } else {
      return;
    }
    try {
      this.onProgress(this.blocks);
    } catch {
      // Progress is for watchers; it never fails the call.
    }
  }
}

/** The beta context editing needs (the Bedrock SDK moves it into the body as `anthropic_beta`). */
export const contextManagementBeta = 'context-management-2025-06-27';

/** The request's beta header, when it uses a beta feature. */
export function betaHeaders(request: ModelRequest): { headers?: Record<string, string> } {
  return request.contextEditing ? { headers: { 'anthropic-beta': contextManagementBeta } } : {};
}

/** What the API's `context_management.applied_edits` says was cleared. */
const AppliedEdits = z.object({
  applied_edits: z.array(z.looseObject({ type: z.string(), cleared_tool_uses: z.number().optional(), cleared_input_tokens: z.number().optional() })),
});

function clearedOf(response: Anthropic.Message): ModelResponse['cleared'] {
  const parsed = AppliedEdits.safeParse((response as { context_management?: unknown }).context_management);
  const edits = parsed.success ? parsed.data.applied_edits.filter((e) => e.type === 'clear_tool_uses_20250919') : [];
  if (edits.length === 0) return undefined;
  return {
    toolUses: edits.reduce((n, e) => n + (e.cleared_tool_uses ?? 0), 0),
    inputTokens: edits.reduce((n, e) => n + (e.cleared_input_tokens ?? 0), 0),
  };
}

/**
 * The provider-neutral answer: content kept verbatim (invariant 12, docs/ARCHITECTURE.md), usage with cache figures.
 * Shared by every provider that speaks the Messages API (Anthropic, Bedrock).
 */
export function fromWire(response: Anthropic.Message): ModelResponse {
  const stopReason = StopReason.safeParse(response.stop_reason);
  if (!stopReason.success) {
    throw new ModelRequestInvalid(`The model answered with an unknown stop_reason "${response.stop_reason}".`);
  }
  const cleared = clearedOf(response);
  return {
    message: { role: 'assistant', content: z.array(ContentBlock).parse(response.content) },
    stopReason: stopReason.data,
    usage: {
      inputTokens: response.usage.input_tokens,
      outputTokens: response.usage.output_tokens,
      cacheReadInputTokens: response.usage.cache_read_input_tokens ?? 0,
      cacheCreationInputTokens: response.usage.cache_creation_input_tokens ?? 0,
    },
    model: response.model,
    ...(cleared ? { cleared } : {}),
  };
}

/**
 * The request body. Prompt caching (invariant 4, docs/ARCHITECTURE.md): a breakpoint after the tools and system prompt,
 * and one on the last block of the newest message, so each request reuses the previous prefix.
 */
export function toWire(request: ModelRequest): Anthropic.MessageCreateParamsNonStreaming {
  const tools = request.tools.map((tool, i) => ({
    // A tool type of the API's own (the memory tool) is named by its type; the API knows its schema.
    ...(tool.type ? { type: tool.type, name: tool.name } : { name: tool.name, description: tool.description, input_schema: tool.inputSchema }),
    ...(i === request.tools.length - 1 ? { cache_control: ephemeral } : {}),
  }));
  const body = {
    model: request.model,
    max_tokens: request.maxTokens,
    system: [{ type: 'text', text: request.system, cache_control: ephemeral }],
    ...(tools.length ? { tools } : {}),
    messages: request.messages.map((m, i) => (i === request.messages.length - 1 ? withBreakpoint(m) : m)),
    ...(request.contextEditing ? { context_management: contextManagement(request.contextEditing) } : {}),
  };
  // Stored blocks are checked by zod's loose schemas, which keep fields the SDK's narrow param
  // unions do not name (verbatim history, invariant 12 in docs/ARCHITECTURE.md); the API takes them as they came.
  return body as unknown as Anthropic.MessageCreateParamsNonStreaming;
}

/** The settings as the API's `clear_tool_uses_20250919` edit (sent with the `context-management-2025-06-27` beta). */
export function contextManagement(editing: ContextEditing): Record<string, unknown> {
  return {
    edits: [
      {
        type: 'clear_tool_uses_20250919',
        trigger: { type: 'input_tokens', value: editing.triggerTokens },
        keep: { type: 'tool_uses', value: editing.keepToolUses },
        ...(editing.clearAtLeastTokens ? { clear_at_least: { type: 'input_tokens', value: editing.clearAtLeastTokens } } : {}),
        ...(editing.excludeTools?.length ? { exclude_tools: editing.excludeTools } : {}),
      },
    ],
  };
}

const cacheable = new Set(['text', 'tool_use', 'tool_result', 'image', 'document']);

function withBreakpoint(message: Message): Message {
  const last = message.content.at(-1);
  if (!last || !cacheable.has(last.type)) return message;
  return { ...message, content: [...message.content.slice(0, -1), { ...last, cache_control: ephemeral }] };
}

/** Error types of a stream's `error` event that retrying cannot help. */
const clientErrorTypes = new Set(['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'request_too_large']);

/**
 * Maps an SDK failure to a named error; transient ones are retried by the state machine. An
 * error without a status is an `error` event in the middle of a stream, named by its type.
 */
export function mapError(error: unknown): Error {
  if (error instanceof APIConnectionError) {
    return new ModelUnavailable(`The model could not be reached: ${error.message}`, { cause: error });
  }
  if (!(error instanceof APIError)) {
    return new ModelUnavailable(`The model call failed: ${String(error)}`, { cause: error });
  }
  if (error.status === undefined) return mapStreamError(error);
  const status = error.status;
  const detail = error.apiMessage ?? error.message;
  if (status === 429) {
    const retryAfter = Number(error.headers?.get('retry-after'));
    return new ModelThrottled(`The model is rate limited (429): ${detail}`, Number.isFinite(retryAfter) ? retryAfter : undefined, {
      cause: error,
    });
  }
  if (status === 529 || error.type === 'overloaded_error') {
    return new ModelOverloaded(`The model is overloaded (${status}): ${detail}`, { cause: error });
  }
  if (status >= 500 || status === 408) {
    return new ModelUnavailable(`The model failed (${status}): ${detail}`, { cause: error });
  }
  if (status === 400 && /prompt is too long|context window|too many tokens/i.test(detail)) {
    // "prompt is too long: 215000 tokens > 200000 maximum": the limit tells compaction how far to cut.
    const limit = Number(/>\s*(\d+)\s*maximum/i.exec(detail)?.[1]);
    return new ContextWindowExceeded(`The conversation is too long for the model: ${detail}`, Number.isFinite(limit) ? limit : undefined, {
      cause: error,
    });
  }
  return new ModelRequestInvalid(`The model rejected the request (${status}): ${detail}`, status, { cause: error });
}

/** An `error` event in the middle of a stream (or an aborted stream), by its error type. */
function mapStreamError(error: APIError): Error {
  const type = error.type ?? '';
  const detail = error.apiMessage ?? error.message;
  const options = { cause: error };
  if (type === 'rate_limit_error') return new ModelThrottled(`The model is rate limited (${type} in the stream): ${detail}`, undefined, options);
  if (type === 'overloaded_error') return new ModelOverloaded(`The model is overloaded (${type} in the stream): ${detail}`, options);
  if (!clientErrorTypes.has(type)) return new ModelUnavailable(`The model's answer broke off (${type || 'no error type'}): ${detail}`, options);
  if (/prompt is too long|context window|too many tokens/i.test(detail)) {
    const limit = Number(/>\s*(\d+)\s*maximum/i.exec(detail)?.[1]);
    return new ContextWindowExceeded(`The conversation is too long for the model: ${detail}`, Number.isFinite(limit) ? limit : undefined, options);
  }
  return new ModelRequestInvalid(`The model rejected the request (${type}): ${detail}`, undefined, options);
}
