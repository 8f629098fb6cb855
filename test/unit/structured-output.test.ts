/** Structured output: the caller's JSON Schema checked at intake, and a final answer that must validate before the run succeeds. */
import { describe, expect, it } from 'vitest';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { MaxIterationsExceeded } from '../../functions/core/steps/types.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import { checkAnswer, finalAnswerNudge, schemaProblems } from '../../functions/core/output/answer.js';
import { finalAnswerTool, outputLimits } from '../../functions/core/output/types.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { memoryCore, say, use } from '../support/agents.js';
import { memoryApi } from '../support/api.js';

const schema = {
  type: 'object',
  properties: { total: { type: 'integer' }, currency: { enum: ['EUR', 'USD'] } },
  required: ['total', 'currency'],
  additionalProperties: false,
};
const answer = (id: string, input: unknown) => use([id, finalAnswerTool, input]);

/** A core whose run asks for `schema`. */
async function structuredCore(mode: 'single' | 'multi' = 'single') {
  const core = await memoryCore('Add the invoice up.');
  const run = core.runs.runs.get('run-1');
  if (run) Object.assign(run, { mode, output: { schema } });
  return core;
}

describe('a caller’s schema', () => {
  it('is taken when it describes an object and compiles; a draft-07 $schema is read as 2020-12', () => {
    expect(schemaProblems(schema)).toEqual([]);
    expect(schemaProblems({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', definitions: { n: { type: 'number' } }, properties: { n: { $ref: '#/definitions/n' } } })).toEqual([]);
    // Formats are annotations and unknown keywords are allowed, as the specification has them.
    expect(schemaProblems({ type: 'object', properties: { mail: { type: 'string', format: 'email' } }, 'x-order': 1 })).toEqual([]);
  });

  it.each([
    ['an array at the top', { type: 'array', items: { type: 'string' } }, /^must describe an object/],
    ['no type at the top', { properties: {} }, /^must describe an object/],
    ['an unknown type', { type: 'object', properties: { n: { type: 'integr' } } }, /^is not a JSON Schema this service can use: schema is invalid/],
    ['a reference it cannot resolve', { type: 'object', properties: { n: { $ref: 'https://example.com/n.json' } } }, /can't resolve reference/],
    ['more than 16 KiB', { type: 'object', description: 'x'.repeat(outputLimits.schemaBytes) }, /^must be at most 16384 bytes of JSON/],
  ])('is refused with %s', (_name, refused, problem) => {
    expect(schemaProblems(refused)).toEqual([expect.stringMatching(problem)]);
  });

  it('is refused at POST /runs with a 400 naming output.schema, and nothing is written', async () => {
    for (const output of [{ schema: { type: 'array' } }, { schema: { type: 'object', required: 'total' } }, { schema: 'object' }, { schema, strict: true }]) {
      const api = memoryApi();
      const res = await api.request('POST', '/runs', { goal: 'Go.', output });
      expect(res.status).toBe(400);
      expect(res.body.error?.issues?.map((i) => i.path)[0]).toMatch(/^output/);
      expect(api.writes()).toBe(0);
    }
  });

  it('is kept on the run, and the OpenAPI document describes output and budget', async () => {
    const api = memoryApi();
    expect((await api.request('POST', '/runs', { goal: 'Go.', mode: 'single', output: { schema }, budget: { maxUsd: 1 } })).status).toBe(202);
    expect(api.runs.runs.get('run-1')).toMatchObject({ output: { schema }, budget: { maxUsd: 1 } });
    const run = (await api.request('GET', '/runs/run-1')).body;
    expect(run).toMatchObject({ output: { schema }, budget: { maxUsd: 1 } });
    const document = JSON.stringify((await api.request('GET', '/openapi.json')).body);
    for (const field of ['"output"', '"budget"', '"maxUsd"', '"maxTokens"', 'BudgetExceeded']) expect(document).toContain(field);
  });
});

describe('the final answer', () => {
  it('is offered to the agent that answers the run, with the caller’s schema, the same on every step', async () => {
    const core = await structuredCore();
    core.model.addTurn(use(['toolu_1', 'list_files', {}]), answer('toolu_2', { total: 3, currency: 'EUR' }));
    await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 5 }, core.deps);
    const [first, second] = core.model.requests;
    expect(first?.tools.at(-1)).toMatchObject({ name: finalAnswerTool, inputSchema: schema });
    expect(JSON.stringify([first?.system, first?.tools])).toBe(JSON.stringify([second?.system, second?.tools]));
  });

  it('is not offered to the Architect, whose answer is a plan', async () => {
    const core = await structuredCore('multi');
    core.model.addTurn(say('thinking'));
    await inferenceStep({ runId: 'run-1', agent: 'architect', iteration: 0 }, core.deps);
    expect(core.model.requests[0]?.tools.map((t) => t.name)).not.toContain(finalAnswerTool);
  });

  it('goes back to the model while invalid, is asked for when a turn ends without it, and is the run’s output once valid', async () => {
    const core = await structuredCore();
    const valid = { content: [{ type: 'text' as const, text: 'Here it is.' }, ...answer('toolu_2', { total: 3, currency: 'EUR' }).content] };
    core.model.addTurn(answer('toolu_1', { total: '3' }), say('The total is 3 EUR.'), valid);
    const steps = [];
    for (let iteration = 0; iteration < 3; iteration++) steps.push(await inferenceStep({ runId: 'run-1', agent: 'single', iteration }, core.deps));

    expect(steps.map((s) => [s.stopReason, s.toolCalls])).toEqual([['tool_use', []], ['answer_required', []], ['end_turn', []]]);
    const [, second, third] = core.model.requests;
    expect(second?.messages.at(-1)?.content).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'toolu_1',
        content: "Not accepted: the answer does not match the schema. (answer): must have required property 'currency'; /total: must be integer. Fix these and call final_answer again.",
        is_error: true,
      },
    ]);
    expect(third?.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: finalAnswerNudge }] });
    expect(core.runs.runs.get('run-1')?.result).toEqual({ response: 'Here it is.', actionsTaken: [], output: { total: 3, currency: 'EUR' } });
    // The accepted call is answered in the transcript, so a session could go on from here.
    expect((await core.conversations.loadTurn(conversationIdOf('run-1', 'single'), 5))?.results).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_2', content: 'Accepted: this is the final answer of the run.' },
    ]);
  });

  it('is accepted only alone: with other calls it is refused and the others run', async () => {
    const core = await structuredCore();
    core.model.addTurn(use(['toolu_1', 'calculator', { operation: 'add', a: 1, b: 2 }], ['toolu_2', finalAnswerTool, { total: 3, currency: 'EUR' }]));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    expect(step).toMatchObject({ stopReason: 'tool_use', toolCalls: [{ id: 'toolu_1', name: 'calculator' }] });
    expect((await core.conversations.loadTurn(conversationIdOf('run-1', 'single'), 1))?.results[1]).toMatchObject({ is_error: true, content: expect.stringContaining('call final_answer alone') });
    expect(core.runs.runs.get('run-1')?.result).toBeUndefined();
  });

  it('fails the run at maxIterations when no valid answer comes, counting the requests for one', async () => {
    const core = await structuredCore();
    core.model.addTurn(say('3 EUR'), say('3 EUR, really'), say('still 3 EUR'));
    await expect(runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 3 }, core.deps)).rejects.toBeInstanceOf(MaxIterationsExceeded);
    expect(core.model.requests).toHaveLength(3);
    expect(core.runs.runs.get('run-1')?.result).toBeUndefined();
  });

  it('is refused when it is larger than the run record keeps', () => {
    const big = { type: 'object', properties: { text: { type: 'string' } } };
    const check = checkAnswer([{ type: 'tool_use', id: 't', name: finalAnswerTool, input: { text: 'x'.repeat(outputLimits.answerBytes) } }], big);
    expect(check.output).toBeUndefined();
    expect(check.results[0]?.result.content).toMatch(/^Not accepted: the answer is 65547 bytes of JSON; at most 65536 are kept/);
  });

  it('changes nothing for a run that asked for no schema: final_answer is an unknown tool there', async () => {
    const core = await memoryCore();
    core.model.addTurn(say('5'));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    expect(step.stopReason).toBe('end_turn');
    expect(core.model.requests[0]?.tools.map((t) => t.name)).not.toContain(finalAnswerTool);
  });
});
