/**
 * The `anthropic` model provider: the Messages API through `@anthropic-ai/sdk`.
 *
 * Failures become the named errors of `core/model.ts`, so the state machine's `Retry` can pick
 * the transient ones. The SDK's own retries are kept low for the same reason (invariant 3, docs/ARCHITECTURE.md).
 */
import Anthropic from '@anthropic-ai/sdk';
import { ContentBlock, StopReason } from '../../core/messages.js';
import type { Message } from '../../core/messages.js';
import {
  ContextWindowExceeded,
  type ModelProvider,
  type ModelRequest,
  ModelRequestInvalid,
  type ModelResponse,
  ModelOverloaded,
  ModelThrottled,
  ModelUnavailable,
} from '../../core/model.js';
import * as z from 'zod';

export interface AnthropicProviderOptions {
  /** The key, or a function that fetches it (from Secrets Manager when deployed), called once. */
  apiKey: string | (() => Promise<string>);
  /** Defaults to `ANTHROPIC_BASE_URL`, as the SDK does. */
  baseURL?: string;
  /** Milliseconds for one HTTP attempt; must stay below the inference Lambda's timeout. */
  timeoutMs?: number;
  maxRetries?: number;
}

const ephemeral = { type: 'ephemeral' } as const;

export class AnthropicProvider implements ModelProvider {
  private client: Promise<Anthropic> | undefined;

  constructor(private readonly options: AnthropicProviderOptions) {}

  private connect(): Promise<Anthropic> {
    this.client ??= (async () => {
      const { apiKey } = this.options;
      return new Anthropic({
        apiKey: typeof apiKey === 'string' ? apiKey : await apiKey(),
        ...(this.options.baseURL ? { baseURL: this.options.baseURL } : {}),
        timeout: this.options.timeoutMs ?? 120_000,
        maxRetries: this.options.maxRetries ?? 1,
      });
    })().catch((error: unknown) => {
      this.client = undefined;
      throw new ModelUnavailable(`The Anthropic API key could not be read: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    });
    return this.client;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    const client = await this.connect();
    let response: Anthropic.Message;
    try {
      response = await client.messages.create(toWire(request), {
        ...(request.signal ? { signal: request.signal } : {}),
      });
    } catch (error) {
      throw mapError(error);
    }
    return fromWire(response);
  }
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
  };
}

/**
 * The request body. Prompt caching (invariant 4, docs/ARCHITECTURE.md): a breakpoint after the tools and system prompt,
 * and one on the last block of the newest message, so each request reuses the previous prefix.
 */
export function toWire(request: ModelRequest): Anthropic.MessageCreateParamsNonStreaming {
  const tools = request.tools.map((tool, i) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.inputSchema,
    ...(i === request.tools.length - 1 ? { cache_control: ephemeral } : {}),
  }));
  const body = {
    model: request.model,
    max_tokens: request.maxTokens,
    system: [{ type: 'text', text: request.system, cache_control: ephemeral }],
    ...(tools.length ? { tools } : {}),
    messages: request.messages.map((m, i) => (i === request.messages.length - 1 ? withBreakpoint(m) : m)),
  };
  // Stored blocks are checked by zod's loose schemas, which keep fields the SDK's narrow param
  // unions do not name (verbatim history, invariant 12 in docs/ARCHITECTURE.md); the API takes them as they came.
  return body as unknown as Anthropic.MessageCreateParamsNonStreaming;
}

const cacheable = new Set(['text', 'tool_use', 'tool_result', 'image', 'document']);

function withBreakpoint(message: Message): Message {
  const last = message.content.at(-1);
  if (!last || !cacheable.has(last.type)) return message;
  return { ...message, content: [...message.content.slice(0, -1), { ...last, cache_control: ephemeral }] };
}

/** Maps an SDK failure to a named error; transient ones are retried by the state machine. */
export function mapError(error: unknown): Error {
  if (error instanceof Anthropic.APIConnectionError) {
    return new ModelUnavailable(`The model could not be reached: ${error.message}`, { cause: error });
  }
  if (!(error instanceof Anthropic.APIError)) {
    return new ModelUnavailable(`The model call failed: ${String(error)}`, { cause: error });
  }
  const status = error.status ?? 0;
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
