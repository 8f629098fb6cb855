import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicProvider, betaHeaders, toWire } from '../../functions/adapters/model/anthropic.js';
import { ScriptedModel, type ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { clearToolResults, clearedPlaceholder } from '../../functions/core/compaction/clearing.js';
import type { ContextEditing } from '../../functions/core/compaction/types.js';
import type { Message } from '../../functions/core/model/messages.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import { type MessagesApi, replayedScript, startMessagesApi } from '../../local/stand-ins/messages-api.js';
import { memoryCore } from '../support/agents.js';

/** A conversation of `n` calls, each answered with a result of about `size` characters. */
function calls(n: number, size = 4_000, name = 'read_file'): Message[] {
  const messages: Message[] = [{ role: 'user', content: [{ type: 'text', text: 'Read the file again and again.' }] }];
  for (let i = 0; i < n; i++) {
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: `toolu_${i}`, name, input: { path: 'a.txt' } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: `${i}:${'x'.repeat(size)}` }] });
  }
  return messages;
}

const tokens = (messages: Message[]) => Math.ceil(JSON.stringify(messages).length / 4);
const clearedIds = (messages: Message[]) =>
  messages.flatMap((m) => m.content.flatMap((b) => (b.type === 'tool_result' && b.content === clearedPlaceholder ? [b.tool_use_id] : [])));

describe('clearToolResults', () => {
  const edit: ContextEditing = { triggerTokens: 8_000, keepToolUses: 2, clearAtLeastTokens: 3_900 };

  it('sends the messages as they are up to the trigger', () => {
    const messages = calls(5);
    expect(clearToolResults(messages, edit, tokens(messages))).toEqual({ messages });
  });

  it('clears the oldest results in whole batches of at least clearAtLeast until the prompt is under the trigger', () => {
    const messages = calls(10); // about 10,400 tokens: one batch of four results (about 4,000) brings it under 8,000
    const { messages: sent, applied } = clearToolResults(messages, edit, tokens(messages));
    expect(clearedIds(sent)).toEqual(['toolu_0', 'toolu_1', 'toolu_2', 'toolu_3']);
    expect(applied?.clearedToolUses).toBe(4);
    expect(applied?.clearedInputTokens).toBeGreaterThanOrEqual(3_900);
    expect(tokens(sent)).toBeLessThanOrEqual(8_000);
    // The stored messages are not touched.
    expect(clearedIds(messages)).toEqual([]);
  });

  it('keeps what it sends byte-identical from one request to the next until another batch is needed', () => {
    const first = calls(10);
    const second = calls(11);
    const a = clearToolResults(first, edit, tokens(first)).messages;
    const b = clearToolResults(second, edit, tokens(second)).messages;
    expect(JSON.stringify(b).startsWith(JSON.stringify(a).slice(0, -1))).toBe(true);
    // Much later, a second batch: the edge moves by a whole batch.
    const later = calls(14);
    expect(clearedIds(clearToolResults(later, edit, tokens(later)).messages)).toEqual(['toolu_0', 'toolu_1', 'toolu_2', 'toolu_3', 'toolu_4', 'toolu_5', 'toolu_6', 'toolu_7']);
  });

  it('never clears the newest keepToolUses results nor those of excluded tools, and applies no batch it cannot fill', () => {
    const messages = calls(4);
    const all = clearToolResults(messages, { triggerTokens: 10, keepToolUses: 2 }, tokens(messages)).messages;
    expect(clearedIds(all)).toEqual(['toolu_0', 'toolu_1']);
    const excluded = clearToolResults(messages, { triggerTokens: 10, keepToolUses: 0, excludeTools: ['read_file'] }, tokens(messages));
    expect(excluded).toEqual({ messages });
    const tooSmall = clearToolResults(messages, { triggerTokens: 10, keepToolUses: 2, clearAtLeastTokens: 5_000 }, tokens(messages));
    expect(tooSmall).toEqual({ messages });
  });
});

describe('the request with context editing', () => {
  const request = { model: 'claude-test', system: 'You help.', tools: [], messages: calls(1), maxTokens: 100 };

  it('carries context_management and its beta only when the deployment configures it', () => {
    expect(toWire(request)).not.toHaveProperty('context_management');
    expect(betaHeaders(request)).toEqual({});
    const editing = { triggerTokens: 120_000, keepToolUses: 5, clearAtLeastTokens: 20_000, excludeTools: ['memory'] };
    expect(toWire({ ...request, contextEditing: editing })).toMatchObject({
      context_management: {
        edits: [
          {
            type: 'clear_tool_uses_20250919',
            trigger: { type: 'input_tokens', value: 120_000 },
            keep: { type: 'tool_uses', value: 5 },
            clear_at_least: { type: 'input_tokens', value: 20_000 },
            exclude_tools: ['memory'],
          },
        ],
      },
    });
    expect(betaHeaders({ ...request, contextEditing: editing })).toEqual({ headers: { 'anthropic-beta': 'context-management-2025-06-27' } });
    // The messages go as stored: the provider clears, not the request.
    expect(toWire({ ...request, contextEditing: editing }).messages[2]).toMatchObject({ content: [{ content: `0:${'x'.repeat(4_000)}` }] });
  });
});

describe('a long run with context editing, on the Messages API stand-in', () => {
  const iterations = 14;
  const script: ScriptedTurn[] = [{ content: [{ type: 'tool_use', id: 'toolu_w', name: 'write_file', input: { path: 'a.txt', content: 'y'.repeat(4_000) } }] }];
  for (let i = 1; i < iterations; i++) script.push({ content: [{ type: 'tool_use', id: `toolu_${i}`, name: 'read_file', input: { path: 'a.txt' } }] });
  script.push({ content: [{ type: 'text', text: 'done' }] });
  let api: MessagesApi;
  beforeAll(async () => {
    api = await startMessagesApi(replayedScript(script));
  });
  afterAll(() => api.close());

  it('clears old results from what the model reads and counts, while every request and the stored transcript keep them all', async () => {
    const core = await memoryCore('Read a.txt again and again.');
    const model = new AnthropicProvider({ apiKey: 'test', baseURL: api.url, maxRetries: 0 });
    const editing: ContextEditing = { triggerTokens: 6_000, keepToolUses: 2, clearAtLeastTokens: 2_000 };
    await runAgentLoop({ runId: core.runId, agent: 'single', maxIterations: iterations + 2 }, { ...core.deps, model, contextEditing: editing });

    expect(api.requests).toHaveLength(iterations + 1);
    expect(api.headers.every((h) => h['anthropic-beta'] === 'context-management-2025-06-27')).toBe(true);
    // Every request carries every result whole; what the model read had the old ones cleared.
    const last = JSON.stringify(api.requests.at(-1)?.messages);
    expect(last).not.toContain(clearedPlaceholder);
    // Cleared in whole batches (three results of about 1,000 tokens reach 2,000), each batch kept
    // for the requests after it, so their prefix stays cached; the last two results never fill one.
    const read = api.prompts.map((p) => JSON.stringify(p.messages).split(clearedPlaceholder).length - 1);
    expect(read).toEqual([0, 0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9, 9]);
    // (Without the breakpoint, which each request puts on its own newest block.)
    const sent = api.prompts.map((p) => JSON.stringify(p.messages, (key, v: unknown) => (key === 'cache_control' ? undefined : v)));
    expect(sent[8]?.startsWith(sent[7]?.slice(0, -1) ?? '-')).toBe(true);
    // The newest results are never cleared.
    const lastRead = api.prompts.at(-1)?.messages ?? [];
    const newest = JSON.stringify(lastRead.slice(-4));
    expect(newest).not.toContain(clearedPlaceholder);
    // What the model counted: input tokens after clearing stay under the trigger once it clears.
    const runRecord = await core.runs.get(core.runId);
    expect(runRecord?.usage.inputTokens).toBeGreaterThan(0);
    const full = api.requests.map((r) => Math.ceil(JSON.stringify([r.system, r.tools, r.messages]).length / 4));
    const counted = api.prompts.map((p) => Math.ceil(JSON.stringify([p.system, p.tools, p.messages]).length / 4));
    expect(full.at(-1)).toBeGreaterThan(editing.triggerTokens);
    expect(counted.at(-1)).toBeLessThan((full.at(-1) ?? 0) - 8_000);
    // The stored conversation keeps every result whole (fork, replay and GET messages read it).
    const conversation = await core.conversations.load(conversationIdOf(core.runId, 'single'));
    const results = conversation.messages.flatMap((m) => m.content.filter((b) => b.type === 'tool_result'));
    expect(results).toHaveLength(iterations);
    expect(JSON.stringify(results)).not.toContain(clearedPlaceholder);
  });

  it('is counted after clearing by the scripted model too', async () => {
    const scripted = new ScriptedModel([{ content: [{ type: 'text', text: 'ok' }] }, { content: [{ type: 'text', text: 'ok' }] }]);
    const messages = calls(10);
    const base = { model: 'm', system: '', tools: [], messages, maxTokens: 10 };
    const plain = await scripted.generate(base);
    const edited = await scripted.generate({ ...base, contextEditing: { triggerTokens: 8_000, keepToolUses: 2, clearAtLeastTokens: 2_500 } });
    expect(plain.cleared).toBeUndefined();
    expect(edited.cleared?.toolUses).toBe(3);
    expect(edited.usage.inputTokens).toBeLessThan(plain.usage.inputTokens - 2_500);
  });
});
