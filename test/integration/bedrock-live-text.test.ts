/**
 * Live text on a Bedrock deployment through the local stack: the inference step streams with
 * InvokeModelWithResponseStream from the Bedrock stand-in (AWS event-stream framing) and writes
 * the answer so far while the model generates; the stored message is InvokeModel's.
 */
import { describe, expect, it } from 'vitest';
import { BedrockProvider } from '../../functions/adapters/model/bedrock.js';
import type { ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { localCredentials, wire } from '../../functions/wiring/wire.js';
import type { BedrockApi } from '../../local/stand-ins/bedrock-api.js';
import { firstLive, spelled } from '../support/live-text.js';
import { useLocalStack } from '../support/local-stack.js';

const model = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
// As deployed: no SDK retry; the definitions are a Bedrock deployment's.
const local = useLocalStack(
  { STEPWISE_MODEL: model, STEPWISE_MODEL_MAX_RETRIES: '0' },
  { provider: 'bedrock', stackProps: { provider: 'bedrock', model } },
);

const text = 'Six times seven is forty-two; here it is, slowly, so that it can be watched as it comes.';
const input = { operation: 'multiply', a: 6, b: 7 };
/** About 3 s of generating. */
const slow: ScriptedTurn = {
  content: [
    { type: 'thinking', thinking: 'Multiply.', signature: 'sig==' },
    { type: 'text', text },
    { type: 'tool_use', id: 'toolu_b1', name: 'calculator', input },
  ],
  pacing: { chunkChars: 2, delayMs: 45 },
};

describe('live text on a Bedrock deployment', () => {
  it('streams the answer into a live item while the model generates, and stores what InvokeModel returns', async () => {
    const tag = local.book.add('bedrock-slow', { turn: slow }, { turn: { content: [{ type: 'text', text: '42' }] } });
    const started = await local.post('/runs', { goal: `${tag} What is 6 times 7?`, mode: 'single' });
    const runId = String(started.body.runId);

    expect((await firstLive(local, runId)).storedAnswers).toBe(0);
    expect(await local.waitFor(runId)).toMatchObject({ status: 'succeeded', result: { response: '42' } });

    const bedrock = local.messages as BedrockApi;
    const index = bedrock.requests.indexOf(local.book.requests.get('bedrock-slow')?.[0] as (typeof bedrock.requests)[number]);
    expect(bedrock.operations[index]).toBe('InvokeModelWithResponseStream');

    const plainTag = local.book.add('bedrock-plain', { turn: { ...slow, pacing: undefined } });
    const plain = await new BedrockProvider({ region: 'us-east-1', credentials: async () => localCredentials, baseURL: local.messages.url, maxRetries: 0 }).generate({
      model,
      system: '',
      tools: [],
      maxTokens: 100,
      messages: [{ role: 'user', content: [{ type: 'text', text: plainTag }] }],
    });
    const conversation = await wire(process.env).conversations.load(conversationIdOf(runId, 'single'));
    expect(conversation.messages[1]?.content).toEqual(plain.message.content);

    const [attempt, ...others] = await wire(process.env).liveText.list(runId);
    expect(others).toEqual([]);
    expect(attempt).toMatchObject({ runId, agent: 'single', seq: 1 });
    const chunks = attempt?.chunks ?? [];
    expect(chunks.every((c) => (c.block === 1 && c.kind === 'text') || (c.block === 2 && c.kind === 'tool_use' && c.id === 'toolu_b1' && c.name === 'calculator'))).toBe(true);
    const written = spelled(chunks);
    expect(written.get(1)?.length).toBeGreaterThan(0);
    expect(text.startsWith(written.get(1) ?? '-')).toBe(true);
    expect(JSON.stringify(input).startsWith(written.get(2) ?? '')).toBe(true);
  }, 30_000);
});
