import { describe, expect, it } from 'vitest';
import type { BedrockApi } from '../../local/stand-ins/bedrock-api.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const model = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const other = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
// As deployed: the model call is not retried by the SDK, only by the state machine; and the
// definitions are a Bedrock deployment's, whose inference function is the Bedrock entry.
const local = useLocalStack(
  { STEPWISE_MODEL: model, STEPWISE_ALLOWED_MODELS: `${model},${other}`, STEPWISE_MODEL_MAX_RETRIES: '0' },
  { provider: 'bedrock', stackProps: { provider: 'bedrock', model, allowedModels: [other] } },
);

/** The signed headers and raw bodies Bedrock received for a tag's requests. */
function received(tag: string) {
  const bedrock = local.messages as BedrockApi;
  const seen = new Set(local.book.requests.get(tag) ?? []);
  const indexes = bedrock.requests.flatMap((r, i) => (seen.has(r) ? [i] : []));
  return {
    headers: indexes.map((i) => bedrock.headers[i] ?? {}),
    bodies: indexes.map((i) => bedrock.bodies[i] ?? {}),
    operations: indexes.map((i) => bedrock.operations[i]),
  };
}

describe('a run with STEPWISE_PROVIDER=bedrock through the local stack', () => {
  it('runs a tool turn to a succeeded run, each step a SigV4-signed, streamed InvokeModel of the deployment’s model', async () => {
    const tag = local.book.add('calc', { turn: use(['toolu_1', 'calculator', { operation: 'multiply', a: 6, b: 7 }]) }, { turn: say('6 × 7 = 42') });
    const run = await local.run(`${tag} What is 6 times 7?`);

    expect(run).toMatchObject({
      status: 'succeeded',
      phase: 'complete',
      result: { response: '6 × 7 = 42', actionsTaken: ['calculator {"operation":"multiply","a":6,"b":7}'] },
      iterations: { single: 2 },
    });
    expect(local.book.requests.get('calc')?.map((r) => r.model)).toEqual([model, model]);
    const { headers, bodies, operations } = received('calc');
    // Streamed, for live text.
    expect(operations).toEqual(['InvokeModelWithResponseStream', 'InvokeModelWithResponseStream']);
    for (const h of headers) expect(h.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=\w+\/\d{8}\/[a-z0-9-]+\/bedrock\/aws4_request, /);
    expect(bodies.map((b) => [b.anthropic_version, 'model' in b])).toEqual([
      ['bedrock-2023-05-31', false],
      ['bedrock-2023-05-31', false],
    ]);
    expect(local.book.requests.get('calc')?.[1]?.messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '42', cache_control: { type: 'ephemeral' } }],
    });
  });

  it('uses another allowed model when the run asks for it', async () => {
    const tag = local.book.add('other', { turn: say('ok') });
    const run = await local.run(`${tag} Be quick.`, { model: other });
    expect(run).toMatchObject({ status: 'succeeded', model: other });
    expect(local.book.requests.get('other')?.map((r) => r.model)).toEqual([other]);
  });

  it('refuses a model the deployment does not allow with a 400 naming model and the list', async () => {
    const answer = await local.post('/runs', { goal: 'Hi.', mode: 'single', model: 'anthropic.claude-3-opus-20240229-v1:0' });
    expect(answer).toEqual({
      status: 400,
      body: {
        error: {
          code: 'ValidationFailed',
          message: 'The body is invalid.',
          issues: [{ path: 'model', message: `must be one of the models this deployment allows: ${model}, ${other}` }],
        },
      },
    });
  });

  it('retries throttling in the state machine, then succeeds', async () => {
    const throttled = { status: 429, type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' };
    const tag = local.book.add('throttled', throttled, throttled, { turn: say('done') });
    const run = await local.run(`${tag} Say done.`);
    expect(run.status).toBe('succeeded');
    expect(local.book.requests.get('throttled')).toHaveLength(3);
  });

  it('fails the run with ModelAccessDenied, naming the model, after one call', async () => {
    const denied = { status: 403, type: 'AccessDeniedException', message: "You don't have access to the model with the specified model ID." };
    const tag = local.book.add('denied', denied, { turn: say('never') });
    const run = await local.run(`${tag} Hello.`);
    expect(run).toMatchObject({ status: 'failed', phase: 'failed', error: { code: 'ModelAccessDenied', agent: 'single' } });
    expect(run.error?.message).toContain(`Bedrock denied access to ${model}`);
    expect(local.book.requests.get('denied')).toHaveLength(1);
  });
});
