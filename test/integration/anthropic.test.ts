import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider, streamBudgetMs } from '../../functions/adapters/model/anthropic.js';
import type { ModelRequest, PartialContent } from '../../functions/core/model/types.js';
import { type MessagesApi, type Reply, scriptedReplies, startMessagesApi } from '../../local/stand-ins/messages-api.js';
import { calculator } from '../../functions/core/tools/builtin/calculator.js';
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
      providerStatus: 400,
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
      providerStatus: status,
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

describe('AnthropicProvider streaming (a request with onProgress)', () => {
  const blocks = [
    { type: 'thinking', thinking: 'Two and three.', signature: 'sig==' },
    { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' },
    { type: 'text', text: 'Let me look that up, then add: 😀 "quoted" \\ done.', citations: null },
    { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: '2 + 3' } },
    { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [{ type: 'web_search_result', url: 'https://example.com', title: 'Sums', encrypted_content: 'abc' }] },
    { type: 'tool_use', id: 'toolu_2', name: 'calculator', input: { operation: 'add', a: 2.5, b: 1e21, note: 'é\n"x"' } },
    { type: 'mystery_block', payload: { nested: [1, 2] } },
  ];
  const turn = { content: blocks, pacing: { chunkChars: 7 }, usage: { inputTokens: 30, outputTokens: 40, cacheReadInputTokens: 20, cacheCreationInputTokens: 5 } };

  it('tells of the text and tool input as they come, and returns what a call without streaming returns, verbatim', async () => {
    const server = await serve({ turn }, { turn });
    const provider = new AnthropicProvider({ apiKey: 'k', baseURL: server.url });
    const plain = await provider.generate(request);
    const seen: PartialContent[] = [];
    const streamed = await provider.generate({ ...request, onProgress: (partial) => seen.push(partial) });

    expect(streamed).toEqual(plain);
    expect(streamed.message.content).toEqual(blocks);
    expect(server.requests.map((r) => r.stream)).toEqual([undefined, true]);
    // One call per delta; the last shows the text and the client tool call whole, in their places.
    expect(seen.at(-1)).toEqual([
      { block: 2, type: 'text', text: blocks[2]?.text },
      { block: 5, type: 'tool_use', id: 'toolu_2', name: 'calculator', partialJson: JSON.stringify(blocks[5]?.input) },
    ]);
    expect(seen.length).toBeGreaterThan(10);
    for (const [i, partial] of seen.entries()) {
      const before = seen[i - 1] ?? [];
      for (const block of before) {
        const now = partial.find((b) => b.block === block.block);
        const text = (b: PartialContent[number] | undefined) => (b?.type === 'text' ? b.text : (b?.partialJson ?? ''));
        expect(text(now).startsWith(text(block))).toBe(true);
      }
    }
  });

  it.each<[string, { type: string; message: string }, Record<string, unknown>]>([
    ['overloaded_error', { type: 'overloaded_error', message: 'Overloaded' }, { name: 'ModelOverloaded', transient: true }],
    ['api_error', { type: 'api_error', message: 'Internal server error' }, { name: 'ModelUnavailable', transient: true }],
    ['rate_limit_error', { type: 'rate_limit_error', message: 'Slow down' }, { name: 'ModelThrottled', transient: true }],
    ['invalid_request_error', { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' }, { name: 'ContextWindowExceeded', limitTokens: 200_000 }],
  ])('maps an %s event in the middle of the stream to the same named error', async (_type, error, expected) => {
    const server = await serve({ turn, cut: { afterDeltas: 3, error } });
    const provider = new AnthropicProvider({ apiKey: 'k', baseURL: server.url, maxRetries: 0 });
    await expect(provider.generate({ ...request, onProgress: () => undefined })).rejects.toMatchObject(expected);
  });

  it('raises ModelUnavailable on a stream dropped mid-way, and on one that outlasts the call budget', async () => {
    const server = await serve({ turn, cut: { afterDeltas: 3 } }, { turn: { ...turn, pacing: { chunkChars: 3, delayMs: 100 } } });
    const provider = new AnthropicProvider({ apiKey: 'k', baseURL: server.url, maxRetries: 0, timeoutMs: 300 });
    await expect(provider.generate({ ...request, onProgress: () => undefined })).rejects.toMatchObject({ name: 'ModelUnavailable', transient: true });
    await expect(provider.generate({ ...request, onProgress: () => undefined })).rejects.toMatchObject({
      name: 'ModelUnavailable',
      message: 'The model did not finish its answer within 300 ms.',
    });
  });

  it('maps an HTTP error before the stream as a call without streaming does', async () => {
    const server = await serve({ status: 429, type: 'rate_limit_error', message: 'slow down', headers: { 'retry-after': '7' } });
    await expect(new AnthropicProvider({ apiKey: 'k', baseURL: server.url, maxRetries: 0 }).generate({ ...request, onProgress: () => undefined })).rejects.toMatchObject({
      name: 'ModelThrottled',
      retryAfterSeconds: 7,
    });
  });
});

describe('streamBudgetMs', () => {
  it('gives a streamed call what a call without streaming may take: the timeout per attempt and the SDK backoff between', () => {
    expect(streamBudgetMs(240_000, 0)).toBe(240_000);
    expect(streamBudgetMs(400, 1)).toBe(400 * 2 + 500);
    expect(streamBudgetMs(1_000, 3)).toBe(4_000 + 500 + 1_000 + 2_000);
  });
});
