/**
 * Live text through the local stack: the inference step streams the model's answer from the
 * Messages API stand-in and writes what has come so far to DynamoDB (`live#<runId>`) while the
 * model generates; the stored message is the one a call without streaming stores.
 */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../functions/adapters/model/anthropic.js';
import type { ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { type LiveAttempt } from '../../functions/core/live/types.js';
import { liveSortKey } from '../../functions/core/live/writer.js';
import type { ContentBlock } from '../../functions/core/model/messages.js';
import { awsClients, readEnv, wire } from '../../functions/wiring/wire.js';
import { firstLive, spelled } from '../support/live-text.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();

/** Starts a run and answers its id. */
async function start(goal: string): Promise<string> {
  const started = await local.post('/runs', { goal, mode: 'single' });
  expect(started.status).toBe(202);
  return String(started.body.runId);
}

async function storedAnswer(runId: string): Promise<ContentBlock[] | undefined> {
  const conversation = await wire(process.env).conversations.load(conversationIdOf(runId, 'single'));
  return conversation.messages.findLast((m) => m.role === 'assistant')?.content;
}

const text = 'Two and three make five; I checked it twice, and here is the answer, written slowly so that it can be watched.';
/** About 3 s of generating: 55 pieces of 2 characters, 55 ms apart. */
const slow: ScriptedTurn = {
  content: [
    { type: 'thinking', thinking: 'Simple arithmetic.', signature: 'sig==' },
    { type: 'text', text, citations: null },
  ],
  pacing: { chunkChars: 2, delayMs: 55 },
};

describe('live text on the local stack', () => {
  it('writes the answer so far while the model generates; the chunks spell a prefix of the stored text, stored as without streaming', async () => {
    const tag = local.book.add('slow', { turn: slow });
    const runId = await start(`${tag} What is 2 + 3?`);

    const seen = await firstLive(local, runId);
    expect(seen.storedAnswers).toBe(0);
    const run = await local.waitFor(runId);
    expect(run).toMatchObject({ status: 'succeeded', result: { response: text } });

    // The message is stored verbatim: what the same answer gives a call without streaming.
    const plainTag = local.book.add('slow-plain', { turn: { ...slow, pacing: undefined } });
    const plain = await new AnthropicProvider({ apiKey: 'test-key', baseURL: local.messages.url }).generate({
      model: 'claude-test',
      system: '',
      tools: [],
      maxTokens: 100,
      messages: [{ role: 'user', content: [{ type: 'text', text: plainTag }] }],
    });
    expect(await storedAnswer(runId)).toEqual(plain.message.content);
    expect(local.book.requests.get('slow')?.map((r) => r.stream)).toEqual([true]);

    // One attempt, for message 1 of the single agent, with text chunks of block 1 only (thinking is not shown).
    const attempts = await wire(process.env).liveText.list(runId);
    expect(attempts).toHaveLength(1);
    const [attempt] = attempts;
    expect(attempt).toMatchObject({ runId, agent: 'single', seq: 1 });
    expect(new Set(attempt?.chunks.map((c) => `${c.block}:${c.kind}`))).toEqual(new Set(['1:text']));
    const written = spelled(attempt?.chunks ?? []).get(1) ?? '';
    expect(written.length).toBeGreaterThan(0);
    expect(text.startsWith(written)).toBe(true);
    // What was seen first is where the item started: chunks are only ever appended.
    expect(attempt?.chunks.slice(0, seen.attempts[0]?.chunks.length)).toEqual(seen.attempts[0]?.chunks);

    // The item's keys, as the contract names them.
    const env = readEnv(process.env);
    const { dynamo } = awsClients(env);
    const items = await dynamo.send(
      new QueryCommand({ TableName: env.STEPWISE_TABLE, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': { S: `live#${runId}` } } }),
    );
    expect(items.Items?.map((item) => [item.pk?.S, item.sk?.S])).toEqual([[`live#${runId}`, liveSortKey(attempt as LiveAttempt)]]);
    expect(liveSortKey(attempt as LiveAttempt)).toMatch(/^single#0000000001#\d{13}-[0-9a-z]{6}$/);
  }, 30_000);

  it('writes a tool call’s input JSON as tool_use chunks', async () => {
    const input = { path: 'answer.md', content: `# Answer\n\n${'Five, as the sum of two and three. '.repeat(4)}` };
    const call: ScriptedTurn = {
      content: [
        { type: 'text', text: 'Saving it.' },
        { type: 'tool_use', id: 'toolu_live_1', name: 'write_file', input },
      ],
      pacing: { chunkChars: 4, delayMs: 60 },
    };
    const tag = local.book.add('slow-call', { turn: call }, { turn: { content: [{ type: 'text', text: 'Saved.' }] } });
    const runId = await start(`${tag} Save the answer.`);
    await firstLive(local, runId);
    expect(await local.waitFor(runId)).toMatchObject({ status: 'succeeded', result: { response: 'Saved.' } });

    const [attempt, ...others] = await wire(process.env).liveText.list(runId);
    expect(others).toEqual([]);
    const calls = attempt?.chunks.filter((c) => c.kind === 'tool_use') ?? [];
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((c) => c.kind === 'tool_use' && c.block === 1 && c.id === 'toolu_live_1' && c.name === 'write_file')).toBe(true);
    expect(JSON.stringify(input).startsWith(spelled(calls).get(1) ?? '-')).toBe(true);
    expect(await storedAnswer(runId)).toEqual([{ type: 'text', text: 'Saved.' }]);
  }, 30_000);

  it('starts a second attempt when a retried step calls the model again, and stores the message once', async () => {
    const tag = local.book.add('broken', { turn: slow, cut: { afterDeltas: 25 } }, { turn: slow });
    const runId = await start(`${tag} What is 2 + 3?`);
    expect(await local.waitFor(runId)).toMatchObject({ status: 'succeeded', result: { response: text }, iterations: { single: 1 } });

    const attempts = await wire(process.env).liveText.list(runId);
    expect(attempts.map((a) => [a.agent, a.seq])).toEqual([
      ['single', 1],
      ['single', 1],
    ]);
    expect(attempts[0]?.attempt).not.toBe(attempts[1]?.attempt);
    // In key order, which is start order: the broken attempt first, its text a prefix too.
    for (const attempt of attempts) expect(text.startsWith(spelled(attempt.chunks).get(1) ?? '-')).toBe(true);
    const conversation = await wire(process.env).conversations.load(conversationIdOf(runId, 'single'));
    expect(conversation.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(local.book.requests.get('broken')).toHaveLength(2);
  }, 30_000);

  it('writes no live item for a model that answers at once', async () => {
    const tag = local.book.add('fast', { turn: { content: [{ type: 'text', text: 'Five.' }] } });
    const runId = await start(`${tag} What is 2 + 3?`);
    expect(await local.waitFor(runId)).toMatchObject({ status: 'succeeded', result: { response: 'Five.' } });
    expect(await wire(process.env).liveText.list(runId)).toEqual([]);
  });
});
