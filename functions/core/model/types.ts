/**
 * The model port: one call in, one complete assistant message out; optionally, the content
 * generated so far while the model generates (`onProgress`, for live text). Its errors are named
 * for the state machine's `Retry`/`Catch`.
 */
import * as z from 'zod';
import { named } from '../errors/errors.js';
import type { ContextEditing } from '../compaction/types.js';
import type { ContentBlock, Message, StopReason, Usage } from './messages.js';

/** A tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /**
   * A tool type Anthropic's API defines (`memory_20250818`): sent as `{ type, name }`, the API
   * supplying its schema. A provider that does not take the type sends the tool by its schema.
   */
  type?: string;
}

/**
 * One content block of an answer being generated, as far as it has come. Only the blocks a
 * watcher is shown: text, and the calls of client tools with their input's JSON text so far.
 * `block` is the block's index in the assistant message (thinking and other blocks keep their
 * places but are not listed).
 */
export type PartialBlock =
  | { block: number; type: 'text'; text: string }
  | { block: number; type: 'tool_use'; id: string; name: string; partialJson: string };

/** The answer generated so far, in block order: each listed block's content from its start. */
export type PartialContent = PartialBlock[];

export interface ModelRequest {
  model: string;
  system: string;
  tools: ToolSpec[];
  messages: Message[];
  maxTokens: number;
  /**
   * Old tool results the provider clears from what the model reads (context editing); the
   * messages are sent whole, as stored. None when absent.
   */
  contextEditing?: ContextEditing;
  signal?: AbortSignal;
  /**
   * Called as the answer is generated, with everything generated so far (never less than the
   * call before). A provider that asks for a streamed answer only when this is given still
   * returns the complete message from `generate`, exactly as without it.
   */
  onProgress?: (partial: PartialContent) => void;
}

export interface ModelResponse {
  message: { role: 'assistant'; content: ContentBlock[] };
  stopReason: StopReason;
  usage: Usage;
  /** The model that answered, as the provider reports it. */
  model: string;
  /** What context editing cleared before the model read the request, when it cleared anything. */
  cleared?: { toolUses: number; inputTokens: number };
}

/** Calls a language model once. Implementations map provider failures to the errors below. */
export interface ModelProvider {
  generate(request: ModelRequest): Promise<ModelResponse>;
}

/** 429: slow down; retried by the state machine with backoff. */
export class ModelThrottled extends named('ModelThrottled') {
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** 529: the provider is overloaded; retried. */
export class ModelOverloaded extends named('ModelOverloaded') {}

/** 5xx, timeouts and dropped connections; retried. */
export class ModelUnavailable extends named('ModelUnavailable') {}

/** 400/401/403/404 and other client errors: retrying cannot help. */
export class ModelRequestInvalid extends named('ModelRequestInvalid') {
  constructor(
    message: string,
    /** The provider's HTTP status, when it answered with one. */
    readonly providerStatus?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * The deployment may not use the model (Bedrock: no IAM grant, or model access not enabled in
 * the account). Retrying cannot help; the message names the model and what to enable.
 */
export class ModelAccessDenied extends named('ModelAccessDenied') {}

/**
 * The model answered with no content at all. Nothing is stored (an empty assistant message
 * would make every later request invalid); the step is retried like a transient fault.
 */
export class ModelResponseEmpty extends named('ModelResponseEmpty') {}

/** The conversation no longer fits the model's context window. */
export class ContextWindowExceeded extends named('ContextWindowExceeded') {
  constructor(
    message: string,
    /** The most prompt tokens the model takes, when the provider said. */
    readonly limitTokens?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The provider is not configured (no key, no script): fails the run with a message that says what to set. */
export class ModelNotConfigured extends named('ModelNotConfigured') {}

export const ModelSettings = z.object({
  model: z.string().min(1),
  maxTokens: z.number().int().positive(),
});

export type ModelSettings = z.infer<typeof ModelSettings>;
