/**
 * The `bedrock` model provider: Claude on Amazon Bedrock through `@anthropic-ai/bedrock-sdk`,
 * whose requests are SigV4-signed with the function's IAM role. There is no API key on this path.
 *
 * The body and the answer are the Messages API's, built and read by the Anthropic adapter (cache
 * breakpoints, verbatim content); only the transport and the error names differ. Bedrock's
 * failures become the named errors of `core/model/types.ts`, so the state machine's `Retry` picks the
 * transient ones, and the SDK's own retries stay low (invariant 3, docs/ARCHITECTURE.md).
 * A request with `onProgress` is streamed with InvokeModelWithResponseStream, whose event
 * stream the SDK reads as the Messages API's stream events (see `streamMessage`).
 */
import { AnthropicBedrock } from '@anthropic-ai/bedrock-sdk/client';
import type Anthropic from '@anthropic-ai/sdk';
import { APIConnectionError, APIError } from '@anthropic-ai/sdk/core/error';
import * as z from 'zod';
import { ContextWindowExceeded, ModelAccessDenied, ModelOverloaded, type ModelProvider, type ModelRequest, ModelRequestInvalid, type ModelResponse, ModelThrottled, ModelUnavailable } from '../../core/model/types.js';
import { betaHeaders, fromWire, mapError, streamBudgetMs, streamMessage, toWire } from './anthropic.js';

/** The only `anthropic_version` Bedrock's InvokeModel takes in a Claude Messages body. */
export const bedrockAnthropicVersion = 'bedrock-2023-05-31';

/** AWS credentials, as the SDK's credential providers resolve them. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface BedrockProviderOptions {
  /** The Region whose Bedrock runtime endpoint is called (the function's own, deployed). */
  region: string;
  /** Resolves credentials on each call: the default AWS chain deployed (the function's role). */
  credentials: () => Promise<AwsCredentials>;
  /** Another endpoint, e.g. the local stand-in. @default `https://bedrock-runtime.<region>.amazonaws.com` */
  baseURL?: string;
  /**
   * Milliseconds for one HTTP attempt; must stay below the inference Lambda's timeout. A streamed
   * attempt gets this long to its last event (`streamBudgetMs`).
   */
  timeoutMs?: number;
  maxRetries?: number;
}

/** Calls Claude on Amazon Bedrock with InvokeModel. */
export class BedrockProvider implements ModelProvider {
  private readonly client: AnthropicBedrock;
  /** How long a streamed call may take in all. */
  private readonly streamBudgetMs: number;

  constructor(options: BedrockProviderOptions) {
    const timeoutMs = options.timeoutMs ?? 120_000;
    const maxRetries = options.maxRetries ?? 1;
    this.streamBudgetMs = streamBudgetMs(timeoutMs, maxRetries);
    this.client = new AnthropicBedrock({
      awsRegion: options.region,
      // `null`, not absent: the SDK would otherwise take a bearer key from AWS_BEARER_TOKEN_BEDROCK.
      // Stepwise signs every request with the role's credentials.
      apiKey: null,
      providerChainResolver: () => Promise.resolve(options.credentials),
      ...(options.baseURL ? { baseURL: options.baseURL } : {}),
      timeout: timeoutMs,
      maxRetries,
    });
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    // The SDK moves `model` into the path and keeps a body `anthropic_version` over its own.
    // Anthropic's tool types (the memory tool) are sent as the custom tools they stand for: same name, same schema (docs/memory.md).
    const tools = request.tools.map(({ type: _type, ...tool }) => tool);
    const body = Object.assign(toWire({ ...request, tools }), { anthropic_version: bedrockAnthropicVersion });
    if (request.onProgress) {
      return fromWire(await streamMessage(this.client.messages, body, request, this.streamBudgetMs, (error) => mapBedrockError(error, request.model)));
    }
    let response: Anthropic.Message;
    try {
      response = await this.client.messages.create(body, { ...(request.signal ? { signal: request.signal } : {}), ...betaHeaders(request) });
    } catch (error) {
      throw mapBedrockError(error, request.model);
    }
    return fromWire(response);
  }
}

/** Bedrock's error body: `{ "message" }` (some AWS front ends write `Message` and `__type`). */
const BedrockErrorBody = z.object({ message: z.string().optional(), Message: z.string().optional(), __type: z.string().optional() });

/** Bedrock's ways of saying the conversation does not fit the model's context window. */
const tooLong = /input is too long|prompt is too long|context window|too many (input )?tokens|exceeds? (the )?context limit/i;

/**
 * Maps a Bedrock failure to a named error, by the `x-amzn-errortype` Bedrock sends and else by
 * status. Transient ones (throttling, capacity, 5xx, model timeouts) are retried by the state
 * machine; access and validation errors are not, and name the model.
 */
export function mapBedrockError(error: unknown, model: string): Error {
  // Connection faults, timeouts and credential lookups fail alike on both SDKs.
  if (error instanceof APIConnectionError || !(error instanceof APIError)) return mapError(error);
  // In a stream, the SDK turns Bedrock's exception events into `error` events typed by the
  // exception's name (`throttlingException`); an Anthropic error type is the model's own.
  const streamed = error.status === undefined;
  if (streamed && !/Exception$/.test(error.type ?? '')) return mapError(error);
  const status = error.status ?? 0;
  const parsed = BedrockErrorBody.safeParse(error.error);
  const body = parsed.success ? parsed.data : {};
  const header = error.headers?.get('x-amzn-errortype') ?? body.__type ?? (streamed ? upperFirst(error.type ?? '') : '');
  const type = header.split(':')[0]?.split('#').at(-1) ?? '';
  const detail = body.message ?? body.Message ?? error.apiMessage ?? error.message;
  const what = streamed ? `${type} in the stream` : `${status}${type ? ` ${type}` : ''}`;
  const options = { cause: error };
  switch (type) {
    case 'ThrottlingException':
    case 'ServiceQuotaExceededException':
      return new ModelThrottled(`Bedrock is throttling calls to ${model} (${what}): ${detail}`, retryAfter(error), options);
    case 'ServiceUnavailableException':
      return new ModelOverloaded(`Bedrock has no capacity for ${model} right now (${what}): ${detail}`, options);
    case 'ModelNotReadyException':
    case 'ModelStreamErrorException':
    case 'ModelTimeoutException':
    case 'ModelErrorException':
    case 'InternalServerException':
      return new ModelUnavailable(`Bedrock could not answer with ${model} (${what}): ${detail}`, options);
    case 'AccessDeniedException':
      return new ModelAccessDenied(
        `Bedrock denied access to ${model} (${what}): ${detail.replace(/[\s.]*$/, '')}. Enable access to this model in the Amazon Bedrock console ` +
          `for this account and Region, and make sure the deployment allows it (stepwise:model / stepwise:allowedModels in cdk.json).`,
        options,
      );
    case 'ResourceNotFoundException':
      return new ModelRequestInvalid(`Bedrock has no model ${model} here (${what}): ${detail}`, status, options);
  }
  if (streamed) {
    if (type === 'ValidationException' && tooLong.test(detail)) {
      return new ContextWindowExceeded(`The conversation is too long for ${model} (${what}): ${detail}`, promptLimit(detail), options);
    }
    if (type === 'ValidationException') return new ModelRequestInvalid(`Bedrock rejected the request to ${model} (${what}): ${detail}`, undefined, options);
    return new ModelUnavailable(`Bedrock's answer from ${model} broke off (${what}): ${detail}`, options);
  }
  if (status === 429) return new ModelThrottled(`Bedrock is throttling calls to ${model} (${what}): ${detail}`, retryAfter(error), options);
  if (status >= 500 || status === 408 || status === 424) {
    return new ModelUnavailable(`Bedrock could not answer with ${model} (${what}): ${detail}`, options);
  }
  if (status === 400 && tooLong.test(detail)) {
    return new ContextWindowExceeded(`The conversation is too long for ${model} (${what}): ${detail}`, promptLimit(detail), options);
  }
  return new ModelRequestInvalid(`Bedrock rejected the request to ${model} (${what}): ${detail}`, status, options);
}

/**
 * The most prompt tokens the model takes, when the message says: "… > 200000 maximum", or
 * "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000" (the window less
 * the output reserved). Compaction uses it to know how far to cut.
 */
function promptLimit(detail: string): number | undefined {
  const maximum = /(\d+)\s*maximum/i.exec(detail);
  if (maximum) return Number(maximum[1]);
  const context = /context limit:\s*\d+\s*\+\s*(\d+)\s*>\s*(\d+)/i.exec(detail);
  return context ? Number(context[2]) - Number(context[1]) : undefined;
}

function upperFirst(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function retryAfter(error: APIError): number | undefined {
  const seconds = Number(error.headers?.get('retry-after') ?? Number.NaN);
  return Number.isFinite(seconds) ? seconds : undefined;
}
