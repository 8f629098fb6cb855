/** Structured output on Bedrock through the local stack: the same final_answer tool, provider-neutral. */
import { describe, expect, it } from 'vitest';
import { finalAnswerTool } from '../../functions/core/output/types.js';
import { use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const model = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const local = useLocalStack(
  { STEPWISE_MODEL: model, STEPWISE_ALLOWED_MODELS: model, STEPWISE_MODEL_MAX_RETRIES: '0' },
  { provider: 'bedrock', stackProps: { provider: 'bedrock', model } },
);

const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

describe('structured output on Bedrock', () => {
  it('offers the caller’s schema as the final_answer tool and succeeds with the answer that validates', async () => {
    const tag = local.book.add('bedrock', { turn: use(['toolu_1', finalAnswerTool, { town: 'Lyon' }]) }, { turn: use(['toolu_2', finalAnswerTool, { city: 'Lyon' }]) });
    const run = await local.run(`${tag} Where is the Part-Dieu station?`, { output: { schema } });

    expect(run).toMatchObject({ status: 'succeeded', result: { output: { city: 'Lyon' } }, iterations: { single: 2 } });
    const requests = local.book.requests.get('bedrock') ?? [];
    expect((requests[0]?.tools as { name: string; input_schema: unknown }[]).find((t) => t.name === finalAnswerTool)?.input_schema).toEqual(schema);
    expect(requests[1]?.messages.at(-1)?.content).toEqual([
      expect.objectContaining({ tool_use_id: 'toolu_1', is_error: true, content: expect.stringContaining("must have required property 'city'") }),
    ]);
  });
});
