/** Structured output through the local stack: a run that asks for a JSON Schema succeeds only with an answer that validates. */
import { describe, expect, it } from 'vitest';
import { finalAnswerNudge } from '../../functions/core/output/answer.js';
import { finalAnswerTool } from '../../functions/core/output/types.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();

const schema = {
  type: 'object',
  properties: { sum: { type: 'number' }, explanation: { type: 'string', minLength: 1 } },
  required: ['sum', 'explanation'],
  additionalProperties: false,
};
const answer = (id: string, input: unknown) => ({ turn: use([id, finalAnswerTool, input]) });

describe('a run that asks for structured output', () => {
  it('sends an invalid answer back, asks again after a turn without one, and succeeds with the valid one in result.output', async () => {
    const tag = local.book.add(
      'structured',
      answer('toolu_1', { sum: '5' }),
      { turn: say('The sum is 5.') },
      answer('toolu_2', { sum: 5, explanation: '2 + 3' }),
    );
    const run = await local.run(`${tag} Add 2 and 3.`, { output: { schema } });

    expect(run).toMatchObject({
      status: 'succeeded',
      output: { schema },
      result: { response: '', output: { sum: 5, explanation: '2 + 3' } },
      iterations: { single: 3 },
    });
    const requests = local.book.requests.get('structured') ?? [];
    expect(requests).toHaveLength(3);
    expect(requests[1]?.messages.at(-1)?.content).toEqual([
      expect.objectContaining({
        type: 'tool_result',
        tool_use_id: 'toolu_1',
        is_error: true,
        content: expect.stringMatching(/^Not accepted: the answer does not match the schema\. \(answer\): must have required property 'explanation'; \/sum: must be number\./),
      }),
    ]);
    expect(requests[2]?.messages.at(-1)?.content).toEqual([{ type: 'text', text: finalAnswerNudge, cache_control: { type: 'ephemeral' } }]);
    // The tool is the caller's schema, and every request sends the same tools and system prompt (prompt caching).
    const tool = (requests[0]?.tools as { name: string; input_schema: unknown }[]).find((t) => t.name === finalAnswerTool);
    expect(tool?.input_schema).toEqual(schema);
    const prefixes = requests.map((r) => JSON.stringify([r.system, r.tools]));
    expect(new Set(prefixes).size).toBe(1);
  });

  it('takes the Coder’s answer in a multi-agent run; the Architect is not offered the tool', async () => {
    const plan = { goal: 'Add 2 and 3.', steps: [{ description: 'Add them.', action: 'calculate' }] };
    const tag = local.book.add('multi', { turn: use(['toolu_p', 'finish_plan', plan]) }, answer('toolu_a', { sum: 5, explanation: 'added' }));
    const started = await local.post('/runs', { goal: `${tag} Add 2 and 3.`, mode: 'multi', output: { schema } });
    const run = await local.waitFor(String(started.body.runId));

    expect(run).toMatchObject({ status: 'succeeded', result: { output: { sum: 5, explanation: 'added' } } });
    const [architect, coder] = (local.book.requests.get('multi') ?? []).map((r) => (r.tools as { name: string }[]).map((t) => t.name));
    expect(architect).not.toContain(finalAnswerTool);
    expect(coder).toContain(finalAnswerTool);
  });

  it('fails at maxIterations, naming the limit, when no valid answer comes', async () => {
    const tag = local.book.add('never', { turn: say('5') }, { turn: say('It is 5.') });
    const run = await local.run(`${tag} Add.`, { output: { schema }, maxIterations: 2 });
    expect(run).toMatchObject({ status: 'failed', error: { code: 'MaxIterationsExceeded', message: 'The agent reached the limit of 2 iterations without finishing.' } });
    expect(run.result).toBeUndefined();
  });

  it('refuses a schema that is not an object’s, or not valid, with a 400 naming it, and writes nothing', async () => {
    for (const bad of [{ type: 'string' }, { type: 'object', properties: { n: { type: 'nmber' } } }]) {
      const answered = await local.post('/runs', { goal: 'Add.', mode: 'single', output: { schema: bad } });
      expect(answered).toMatchObject({ status: 400, body: { error: { code: 'ValidationFailed', issues: [{ path: 'output.schema' }] } } });
    }
    expect((await local.get('/runs')).body.items).toHaveLength(3);
  });
});
