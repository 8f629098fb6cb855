import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../functions/adapters/model/anthropic.js';
import type { ModelRequest } from '../../functions/core/model.js';
import { type MessagesApi, type Reply, scriptedReplies, startMessagesApi } from '../../local/stand-ins/messages-api.js';
import { calculator } from '../../functions/core/tools/calculator.js';
import { inputJsonSchema } from '../../functions/core/tools/registry.js';

let api: MessagesApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
  delete process.env.ANTHROPIC_BASE_URL;
});

async function serve(...replies: Reply[]): Promise<MessagesApi> {
  api = await startMessagesApi(scriptedReplies(replies));
  return api;
}

const request: ModelRequest = {
  model: 'claude-test',
  maxTokens: 512,
  system: 'You are terse.',
  tools: [{ name: 'calculator', description: calculator.description, inputSchema: inputJsonSchema(calculator) }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'What is 2 + 3?' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'calculator', input: { operation: 'add', a: 2, b: 3 } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '5' }] },
  ],
};

const ok: Reply = { turn: { content: [{ type: 'text', text: '5' }], usage: { inputTokens: 30, outputTokens: 2, cacheReadInputTokens: 20 } } };

describe('AnthropicProvider over HTTP', () => {
  it('sends the conversation with cache breakpoints and maps the answer', async () => {
    const server = await serve(ok);
    const provider = new AnthropicProvider({ apiKey: 'test-key', baseURL: server.url });

    const response = await provider.generate(request);

    expect(response).toEqual({
      message: { role: 'assistant', content: [{ type: 'text', text: '5' }] },
      stopReason: 'end_turn',
      usage: { inputTokens: 30, outputTokens: 2, cacheReadInputTokens: 20, cacheCreationInputTokens: 0 },
      model: 'claude-test',
    });
    const sent = server.requests[0];
    const auth = server.headers[0];
    expect(`${auth?.['x-api-key'] ?? ''} ${auth?.authorization ?? ''}`).toContain('test-key');
    expect(sent?.system).toEqual([{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }]);
    expect(sent?.tools).toEqual([{ name: 'calculator', description: calculator.description, input_schema: inputJsonSchema(calculator), cache_control: { type: 'ephemeral' } }]);
    expect(sent?.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '5', cache_control: { type: 'ephemeral' } }] });
    // Only the newest message carries a breakpoint; the history goes out as stored.
    expect(sent?.messages.slice(0, 2)).toEqual(request.messages.slice(0, 2));
    expect(request.messages[2]?.content[0]).not.toHaveProperty('cache_control');
  });

  it('honours ANTHROPIC_BASE_URL', async () => {
    const server = await serve(ok);
    process.env.ANTHROPIC_BASE_URL = server.url;
    await new AnthropicProvider({ apiKey: 'k' }).generate(request);
    expect(server.requests).toHaveLength(1);
  });

  it('rides out one 529 with a single SDK retry', async () => {
    const server = await serve({ status: 529, type: 'overloaded_error', message: 'Overloaded' }, ok);
    const response = await new AnthropicProvider({ apiKey: 'k', baseURL: server.url, maxRetries: 1 }).generate(request);
    expect(response.stopReason).toBe('end_turn');
    expect(server.requests).toHaveLength(2);
  });

  it('raises ModelOverloaded when 529s outlast the SDK retry, after a bounded number of requests', async () => {
    const overloaded: Reply = { status: 529, type: 'overloaded_error', message: 'Overloaded' };
    const server = await serve(overloaded, overloaded, overloaded);
    const provider = new AnthropicProvider({ apiKey: 'k', baseURL: server.url, maxRetries: 1 });
    await expect(provider.generate(request)).rejects.toMatchObject({ name: 'ModelOverloaded', transient: true });
    expect(server.requests).toHaveLength(2);
  });

  it('raises ModelRequestInvalid on a 400 without retrying', async () => {
    const server = await serve({ status: 400, type: 'invalid_request_error', message: 'messages: roles must alternate' }, ok);
    const provider = new AnthropicProvider({ apiKey: 'k', baseURL: server.url, maxRetries: 1 });
    await expect(provider.generate(request)).rejects.toMatchObject({
      name: 'ModelRequestInvalid',
      status: 400,
      message: 'The model rejected the request (400): messages: roles must alternate',
    });
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    [401, 'authentication_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
  ])('raises ModelRequestInvalid on a %i', async (status, type) => {
    const server = await serve({ status, type, message: 'no' });
    await expect(new AnthropicProvider({ apiKey: 'k', baseURL: server.url }).generate(request)).rejects.toMatchObject({
      name: 'ModelRequestInvalid',
      status,
    });
  });

  it('raises ModelThrottled with the retry-after of a 429', async () => {
    const server = await serve({ status: 429, type: 'rate_limit_error', message: 'slow down', headers: { 'retry-after': '7' } });
    await expect(new AnthropicProvider({ apiKey: 'k', baseURL: server.url, maxRetries: 0 }).generate(request)).rejects.toMatchObject({
      name: 'ModelThrottled',
      retryAfterSeconds: 7,
    });
  });

  it('raises ModelUnavailable on a 500 and on a dropped connection', async () => {
    const server = await serve({ status: 500, type: 'api_error', message: 'boom' }, { drop: true });
    const provider = new AnthropicProvider({ apiKey: 'k', baseURL: server.url, maxRetries: 0 });
    await expect(provider.generate(request)).rejects.toMatchObject({ name: 'ModelUnavailable' });
    await expect(provider.generate(request)).rejects.toMatchObject({ name: 'ModelUnavailable' });
  });

  it('raises ModelUnavailable when the answer takes longer than the call timeout', async () => {
    const server = await serve({ ...ok, delayMs: 2_000 });
    const provider = new AnthropicProvider({ apiKey: 'k', baseURL: server.url, maxRetries: 0, timeoutMs: 300 });
    await expect(provider.generate(request)).rejects.toMatchObject({ name: 'ModelUnavailable' });
  });

  it('raises ContextWindowExceeded when the prompt is too long, with the limit the API named', async () => {
    const server = await serve({ status: 400, type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' });
    await expect(new AnthropicProvider({ apiKey: 'k', baseURL: server.url }).generate(request)).rejects.toMatchObject({
      name: 'ContextWindowExceeded',
      limitTokens: 200_000,
    });
  });

  it('keeps unknown assistant blocks verbatim', async () => {
    const thinking = { type: 'thinking', thinking: 'hmm', signature: 'sig==' };
    const server = await serve({ turn: { content: [thinking, { type: 'text', text: 'x', citations: null }] } });
    const response = await new AnthropicProvider({ apiKey: 'k', baseURL: server.url }).generate(request);
    expect(response.message.content).toEqual([thinking, { type: 'text', text: 'x', citations: null }]);
  });
});
