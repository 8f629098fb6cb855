import { afterEach, describe, expect, it } from 'vitest';
import { BedrockProvider, type BedrockProviderOptions } from '../../functions/adapters/model/bedrock.js';
import { localCredentials } from '../../functions/wiring/wire.js';
import type { ModelRequest, PartialContent } from '../../functions/core/model/types.js';
import { calculator } from '../../functions/core/tools/builtin/calculator.js';
import { inputJsonSchema } from '../../functions/core/tools/registry.js';
import { type BedrockApi, startBedrockApi } from '../../local/stand-ins/bedrock-api.js';
import { type Reply, scriptedReplies } from '../../local/stand-ins/messages-api.js';

let api: BedrockApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
  delete process.env.AWS_BEARER_TOKEN_BEDROCK;
});

async function serve(...replies: Reply[]): Promise<BedrockApi> {
  api = await startBedrockApi(scriptedReplies(replies), { region: 'eu-west-1' });
  return api;
}

const model = 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0';

function provider(server: BedrockApi, options: Partial<BedrockProviderOptions> = {}): BedrockProvider {
  return new BedrockProvider({ region: 'eu-west-1', credentials: async () => localCredentials, baseURL: server.url, maxRetries: 0, ...options });
}

const request: ModelRequest = {
  model,
  maxTokens: 512,
  system: 'You are terse.',
  tools: [{ name: 'calculator', description: calculator.description, inputSchema: inputJsonSchema(calculator) }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'What is 2 + 3, then times 4?' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'calculator', input: { operation: 'add', a: 2, b: 3 } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '5' }] },
  ],
};

const multiply = { type: 'tool_use', id: 'toolu_2', name: 'calculator', input: { operation: 'multiply', a: 5, b: 4 } };
const ok: Reply = { turn: { content: [{ type: 'text', text: '20' }], usage: { inputTokens: 30, outputTokens: 2 } } };
const fault = (status: number, type: string, message: string): Reply => ({ status, type, message });

describe('BedrockProvider over HTTP', () => {
  it('invokes the model with the Messages body, signed with SigV4 for bedrock, and maps a tool_use answer', async () => {
    const server = await serve({ turn: { content: [{ type: 'text', text: 'Now times 4.' }, multiply], usage: { inputTokens: 40, outputTokens: 9, cacheReadInputTokens: 32 } } });

    const response = await provider(server).generate(request);

    expect(response).toEqual({
      message: { role: 'assistant', content: [{ type: 'text', text: 'Now times 4.' }, multiply] },
      stopReason: 'tool_use',
      usage: { inputTokens: 40, outputTokens: 9, cacheReadInputTokens: 32, cacheCreationInputTokens: 0 },
      model,
    });
    // The model travels in the path; the body is the Messages request with Bedrock's version.
    expect(server.requests.map((r) => r.model)).toEqual([model]);
    expect(server.bodies[0]).toEqual({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 512,
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      tools: [{ name: 'calculator', description: calculator.description, input_schema: inputJsonSchema(calculator), cache_control: { type: 'ephemeral' } }],
      messages: [
        ...request.messages.slice(0, 2),
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '5', cache_control: { type: 'ephemeral' } }] },
      ],
    });
    const headers = server.headers[0] ?? {};
    expect(headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=S3RVER\/\d{8}\/eu-west-1\/bedrock\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
    );
    expect(headers['x-api-key']).toBeUndefined();
  });

  it('signs with the role even when a Bedrock API key is in the environment', async () => {
    process.env.AWS_BEARER_TOKEN_BEDROCK = 'not-to-be-used';
    const server = await serve(ok);
    await provider(server).generate(request);
    expect(server.headers[0]?.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
  });

  it('is refused by the stand-in when signed with another secret', async () => {
    const server = await serve(ok);
    const forged = provider(server, { credentials: async () => ({ ...localCredentials, secretAccessKey: 'wrong' }) });
    await expect(forged.generate(request)).rejects.toMatchObject({ name: 'ModelRequestInvalid', providerStatus: 403 });
    expect(server.requests).toEqual([]);
  });

  it('rides out one ThrottlingException with a single SDK retry', async () => {
    const server = await serve(fault(429, 'ThrottlingException', 'Too many requests, please wait before trying again.'), ok);
    const response = await provider(server, { maxRetries: 1 }).generate(request);
    expect(response.message.content).toEqual([{ type: 'text', text: '20' }]);
    expect(server.requests).toHaveLength(2);
  });

  it('raises ModelThrottled when throttling outlasts the SDK retries', async () => {
    const server = await serve(fault(429, 'ThrottlingException', 'Too many tokens, please wait before trying again.'));
    await expect(provider(server).generate(request)).rejects.toMatchObject({
      name: 'ModelThrottled',
      transient: true,
      message: `Bedrock is throttling calls to ${model} (429 ThrottlingException): Too many tokens, please wait before trying again.`,
    });
  });

  it.each([
    [503, 'ServiceUnavailableException', 'ModelOverloaded'],
    [500, 'InternalServerException', 'ModelUnavailable'],
    [408, 'ModelTimeoutException', 'ModelUnavailable'],
    [424, 'ModelErrorException', 'ModelUnavailable'],
    [429, 'ModelNotReadyException', 'ModelUnavailable'],
  ])('raises a transient error on a %i %s', async (status, type, name) => {
    const server = await serve(fault(status, type, 'try later'));
    await expect(provider(server).generate(request)).rejects.toMatchObject({ name, transient: true });
  });

  it('raises ModelUnavailable on a dropped connection and on an answer slower than the call timeout', async () => {
    const server = await serve({ drop: true }, { ...ok, delayMs: 2_000 });
    await expect(provider(server).generate(request)).rejects.toMatchObject({ name: 'ModelUnavailable', transient: true });
    await expect(provider(server, { timeoutMs: 300 }).generate(request)).rejects.toMatchObject({ name: 'ModelUnavailable', transient: true });
  });

  it.each([
    ['Input is too long for requested model.', undefined],
    ['prompt is too long: 210000 tokens > 200000 maximum', 200_000],
    ['input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again', 191_808],
  ])('raises ContextWindowExceeded on the ValidationException "%s", with the prompt limit it names', async (message, limitTokens) => {
    const server = await serve(fault(400, 'ValidationException', message));
    const error = await provider(server, { maxRetries: 1 }).generate(request).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ContextWindowExceeded', transient: false, limitTokens });
    expect(server.requests).toHaveLength(1);
  });

  it('raises ModelRequestInvalid on another ValidationException, without retrying', async () => {
    const server = await serve(fault(400, 'ValidationException', 'messages: roles must alternate between "user" and "assistant"'), ok);
    await expect(provider(server, { maxRetries: 1 }).generate(request)).rejects.toMatchObject({
      name: 'ModelRequestInvalid',
      providerStatus: 400,
      transient: false,
      message: `Bedrock rejected the request to ${model} (400 ValidationException): messages: roles must alternate between "user" and "assistant"`,
    });
    expect(server.requests).toHaveLength(1);
  });

  it('raises ModelAccessDenied, naming the model and the access to enable, without retrying', async () => {
    const server = await serve(fault(403, 'AccessDeniedException', "You don't have access to the model with the specified model ID."), ok);
    const error = await provider(server, { maxRetries: 1 }).generate(request).catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: 'ModelAccessDenied',
      status: 403,
      transient: false,
      message:
        `Bedrock denied access to ${model} (403 AccessDeniedException): You don't have access to the model with the specified model ID. ` +
        'Enable access to this model in the Amazon Bedrock console for this account and Region, and make sure the deployment allows it ' +
        '(stepwise:model / stepwise:allowedModels in cdk.json).',
    });
    expect(server.requests).toHaveLength(1);
  });

  it('keeps thinking blocks verbatim', async () => {
    const thinking = { type: 'thinking', thinking: 'hmm', signature: 'sig==' };
    const server = await serve({ turn: { content: [thinking, { type: 'text', text: 'x', citations: null }] } });
    const response = await provider(server).generate(request);
    expect(response.message.content).toEqual([thinking, { type: 'text', text: 'x', citations: null }]);
  });
});

describe('BedrockProvider streaming (InvokeModelWithResponseStream, a request with onProgress)', () => {
  const thinking = { type: 'thinking', thinking: 'Five times four.', signature: 'sig==' };
  const redacted = { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' };
  const said = { type: 'text', text: 'Now times 4 — with a 😀 and "quotes".', citations: null };
  const turn = { content: [thinking, redacted, said, multiply], pacing: { chunkChars: 5 }, usage: { inputTokens: 40, outputTokens: 9, cacheReadInputTokens: 32 } };

  it('tells of the text and tool input as they come, and returns what InvokeModel returns, verbatim', async () => {
    const server = await serve({ turn }, { turn });
    const plain = await provider(server).generate(request);
    const seen: PartialContent[] = [];
    const streamed = await provider(server).generate({ ...request, onProgress: (partial) => seen.push(partial) });

    expect(streamed).toEqual(plain);
    expect(streamed.message.content).toEqual([thinking, redacted, said, multiply]);
    expect(server.operations).toEqual(['InvokeModel', 'InvokeModelWithResponseStream']);
    expect(server.bodies[1]).toEqual(server.bodies[0]);
    for (const h of server.headers) expect(h.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=S3RVER\/\d{8}\/eu-west-1\/bedrock\/aws4_request, /);
    expect(seen.length).toBeGreaterThan(5);
    expect(seen.at(-1)).toEqual([
      { block: 2, type: 'text', text: said.text },
      { block: 3, type: 'tool_use', id: 'toolu_2', name: 'calculator', partialJson: JSON.stringify(multiply.input) },
    ]);
  });

  it.each<[string, Record<string, unknown>]>([
    ['throttlingException', { name: 'ModelThrottled', transient: true }],
    ['serviceUnavailableException', { name: 'ModelOverloaded', transient: true }],
    ['modelStreamErrorException', { name: 'ModelUnavailable', transient: true }],
    ['internalServerException', { name: 'ModelUnavailable', transient: true }],
    ['modelTimeoutException', { name: 'ModelUnavailable', transient: true }],
    ['validationException', { name: 'ModelRequestInvalid', transient: false }],
  ])('maps a %s in the middle of the stream to the same named error', async (type, expected) => {
    const server = await serve({ turn, cut: { afterDeltas: 2, error: { type, message: 'mid-stream' } } });
    const error = await provider(server).generate({ ...request, onProgress: () => undefined }).catch((e: unknown) => e);
    expect(error).toMatchObject({ ...expected, message: expect.stringContaining(`${type.charAt(0).toUpperCase()}${type.slice(1)} in the stream`) });
  });

  it('raises ContextWindowExceeded on a validationException in the stream that says the prompt is too long', async () => {
    const server = await serve({ turn, cut: { afterDeltas: 0, error: { type: 'validationException', message: 'prompt is too long: 210000 tokens > 200000 maximum' } } });
    await expect(provider(server).generate({ ...request, onProgress: () => undefined })).rejects.toMatchObject({ name: 'ContextWindowExceeded', limitTokens: 200_000 });
  });

  it('raises ModelUnavailable on a stream dropped mid-way, and on one that outlasts the call budget', async () => {
    const server = await serve({ turn, cut: { afterDeltas: 2 } }, { turn: { ...turn, pacing: { chunkChars: 3, delayMs: 100 } } });
    await expect(provider(server).generate({ ...request, onProgress: () => undefined })).rejects.toMatchObject({ name: 'ModelUnavailable', transient: true });
    await expect(provider(server, { timeoutMs: 300 }).generate({ ...request, onProgress: () => undefined })).rejects.toMatchObject({
      name: 'ModelUnavailable',
      message: 'The model did not finish its answer within 300 ms.',
    });
  });

  it('maps a fault before the stream as InvokeModel does', async () => {
    const server = await serve(fault(403, 'AccessDeniedException', "You don't have access to the model with the specified model ID."));
    await expect(provider(server).generate({ ...request, onProgress: () => undefined })).rejects.toMatchObject({ name: 'ModelAccessDenied', status: 403 });
    expect(server.operations).toEqual(['InvokeModelWithResponseStream']);
  });
});
