/**
 * The offline model: what it finds in a goal, and whole runs of the real agent loop (in-memory
 * stores, the real tools) answered by it through the Messages API shape the local server serves.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toWire } from '../../functions/adapters/model/anthropic.js';
import type { ModelProvider } from '../../functions/core/model/types.js';
import { toolUses } from '../../functions/core/model/messages.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import { validatorOf } from '../../functions/core/tools/json-schema.js';
import { renderPlan } from '../../functions/core/plan/plan.js';
import { Plan } from '../../functions/core/plan/types.js';
import { type Expr, findExpression } from '../../local/offline/arithmetic.js';
import { fileIntents } from '../../local/offline/files.js';
import { offlineResponder, offlineTurn } from '../../local/offline/model.js';
import { readScript } from '../../functions/adapters/model/scripted.js';
import { readdirSync } from 'node:fs';
import { valueFor } from '../../local/offline/schema-value.js';
import { planSteps } from '../../local/offline/team.js';
import { memoryCore } from '../support/agents.js';

/** The value of an expression, worked out here rather than by the model's calculator calls. */
function valueOf(expr: Expr): number {
  if (expr.kind === 'number') return expr.value;
  const [a, b] = [valueOf(expr.left), valueOf(expr.right)];
  return { add: a + b, subtract: a - b, multiply: a * b, divide: a / b }[expr.op];
}

/** The offline model as a provider of the core: each request sent as the Messages API would get it. */
const offline: ModelProvider = {
  async generate(request) {
    const turn = offlineTurn(toWire(request));
    return {
      message: { role: 'assistant', content: turn.content },
      stopReason: toolUses(turn).length ? 'tool_use' : 'end_turn',
      usage: { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      model: request.model,
    };
  },
};

async function offlineRun(goal: string) {
  const core = await memoryCore(goal);
  core.deps.model = offline;
  const outcome = await runAgentLoop({ runId: core.runId, agent: 'single', maxIterations: 10 }, core.deps);
  const files = core.workspaces.get(core.runId);
  return { outcome, file: async (path: string) => new TextDecoder().decode(await files?.read(path)) };
}

const words = { add: 'plus', subtract: 'minus', multiply: 'times', divide: 'divided by' } as const;

describe('arithmetic in a goal', () => {
  it('finds two numbers and an operation in any of its phrasings', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 99_999 }), fc.integer({ min: 1, max: 99_999 }), fc.constantFrom('add', 'subtract', 'multiply', 'divide'), (a, b, op) => {
        const expected = { add: a + b, subtract: a - b, multiply: a * b, divide: a / b }[op];
        for (const goal of [`What is ${a} ${words[op]} ${b}?`, `${op === 'add' ? `Add ${a} and ${b}` : `Compute ${a} ${{ add: '+', subtract: '-', multiply: '*', divide: '/' }[op]} ${b}`}.`]) {
          const expr = findExpression(goal);
          expect(expr && valueOf(expr)).toBeCloseTo(expected);
        }
      }),
    );
  });

  it('keeps precedence and parentheses, and reads thousands separators and percentages', () => {
    const cases: [string, number][] = [
      ['What is 2 + 3 * 4 - 10 / 5?', 2 + 3 * 4 - 10 / 5],
      ['Work out (2 + 3) × 4.', (2 + 3) * 4],
      ['Multiply 1,234 by 5,678 please', 1234 * 5678],
      ['What is 15% of 80?', (15 * 80) / 100],
      ['Subtract 7 from 20, then tell me', 20 - 7],
      ['What is 17 divided by 4, plus 3?', 17 / 4 + 3],
    ];
    for (const [goal, value] of cases) expect({ goal, value: valueOf(findExpression(goal) ?? { kind: 'number', value: NaN }) }).toEqual({ goal, value });
  });

  it('sees none in goals without an operation, or in dates and tags', () => {
    for (const goal of ['Write hello.txt containing Hello', 'Note the meeting on 2026-11-23.', '[[chaos-7-3]] Tell me a joke', 'I have 3 apples']) {
      expect({ goal, expr: findExpression(goal) }).toEqual({ goal, expr: undefined });
    }
  });
});

describe('file work in a goal', () => {
  it('tells writes, reads, edits and listing apart, with the paths and content named', () => {
    expect(fileIntents('Write hello.txt containing "Hello, world" and read notes/todo.md. List the files.')).toEqual({
      writes: [{ path: 'hello.txt', content: 'Hello, world\n' }],
      reads: ['notes/todo.md'],
      edits: [],
      list: true,
    });
    expect(fileIntents('In README.md replace "draft" with "final".')).toEqual({
      writes: [],
      reads: [],
      edits: [{ path: 'README.md', oldString: 'draft', newString: 'final' }],
      list: false,
    });
    expect(fileIntents('Save the answer to answer.md.').writes).toEqual([{ path: 'answer.md' }]);
  });
});

describe('a value for a JSON Schema', () => {
  it('validates against the schema, and carries the computed number where a number goes', () => {
    const schemas: Record<string, unknown>[] = [
      { type: 'object', properties: { product: { type: 'integer' } }, required: ['product'] },
      { type: 'object', properties: { total: { type: 'number', minimum: 0 }, note: { type: 'string', minLength: 3 } }, required: ['note'], additionalProperties: false },
      { type: 'object', properties: { tags: { type: 'array', items: { type: 'string', format: 'email' }, minItems: 2 }, kind: { enum: ['a', 'b'] } }, required: ['tags', 'kind'] },
      { type: 'object', $defs: { when: { type: 'string', format: 'date-time' } }, properties: { at: { $ref: '#/$defs/when' }, n: { type: ['null', 'integer'], maximum: 5 } }, required: ['at', 'n'] },
      { type: 'object', allOf: [{ properties: { a: { type: 'boolean' } }, required: ['a'] }, { properties: { b: { const: 7 } }, required: ['b'] }] },
      { type: 'object', properties: { v: { anyOf: [{ type: 'integer', multipleOf: 5, minimum: 12 }, { type: 'string' }] } }, required: ['v'] },
    ];
    for (const schema of schemas) {
      const value = valueFor(schema, { number: 42, text: 'the answer' });
      expect({ schema, value, valid: validatorOf(schema)(value) }).toEqual({ schema, value, valid: true });
    }
    expect(valueFor(schemas[0], { number: 7006652 })).toEqual({ product: 7006652 });
  });
});

describe('the offline model in the agent loop', () => {
  it('answers an arithmetic goal it has not seen with calculator calls and the right number, and saves it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 10, max: 99_999 }), fc.integer({ min: 10, max: 99_999 }), async (a, b) => {
        const { outcome, file } = await offlineRun(`What is ${a} times ${b}? Save the answer to answer.md.`);
        const product = (a * b).toLocaleString('en-US');
        expect(outcome.response).toBe(`${a} × ${b} = ${product}. I saved it to answer.md.`);
        expect(await file('answer.md')).toBe(`# Answer\n\n${a} × ${b} = ${a * b}\n`);
      }),
      { numRuns: 5 },
    );
  });

  it('writes and reads the files a goal names, and says what it is for a goal it cannot work', async () => {
    const wrote = await offlineRun('Write greeting.txt containing "Hello, offline world"');
    expect(await wrote.file('greeting.txt')).toBe('Hello, offline world\n');
    expect(wrote.outcome.response).toBe('I wrote greeting.txt.');

    const joke = await offlineRun('Tell me a joke about lambdas.');
    expect(joke.outcome).toMatchObject({ iterations: 1, response: expect.stringContaining("I'm the offline stand-in model") });
  });

  it('does not claim a write a reviewer denied, and says why', () => {
    const goal = 'What is 6 times 7? Save the answer to answer.md.';
    const first = offlineTurn({ messages: [{ role: 'user', content: goal }], tools: [{ name: 'calculator' }, { name: 'write_file' }] });
    const calc = toolUses(first)[0];
    const second = offlineTurn({
      tools: [{ name: 'calculator' }, { name: 'write_file' }],
      messages: [
        { role: 'user', content: goal },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: calc?.id, content: String(6 * 7) }] },
      ],
    });
    const write = toolUses(second)[0];
    expect(write).toMatchObject({ name: 'write_file', input: { path: 'answer.md' } });
    const last = offlineTurn({
      tools: [{ name: 'calculator' }, { name: 'write_file' }],
      messages: [
        { role: 'user', content: goal },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: calc?.id, content: '42' }] },
        { role: 'assistant', content: second.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: write?.id, content: 'A reviewer denied this tool call: print it instead', is_error: true }] },
      ],
    });
    expect(last.content).toEqual([{ type: 'text', text: '6 × 7 = 42. I did not save it to answer.md: a reviewer denied the write (print it instead).' }]);
  });

  it('gives a retried request the same call, with the same id', () => {
    const request = { messages: [{ role: 'user', content: 'What is 3 times 4?' }], tools: [{ name: 'calculator' }] };
    expect(offlineTurn(request)).toEqual(offlineTurn(structuredClone(request)));
  });
});

describe('the offline model as Architect and Coder', () => {
  it('plans the files a goal implies, and the Coder writes each one from the plan it is given', () => {
    const goal = 'Write a tiny greeting module in TypeScript with a README.';
    const plan = Plan.parse({ goal, steps: planSteps(goal) });
    expect(plan.steps.map((s) => s.parameters?.path)).toEqual(['src/greeting.ts', 'README.md']);

    const opening = `The user's goal:\n${goal}\n\nThe Architect's plan:\n${renderPlan(plan)}\n\nCarry out this plan in the workspace.`;
    const tools = ['read_file', 'write_file', 'list_files', 'edit_file', 'calculator'].map((name) => ({ name }));
    const first = offlineTurn({ tools, messages: [{ role: 'user', content: opening }] });
    expect(toolUses(first)).toEqual([expect.objectContaining({ name: 'write_file', input: expect.objectContaining({ path: 'src/greeting.ts' }) })]);
  });
});

describe('the offline team in the agent loop', () => {
  it('plans, then carries out the plan and gives the structured answer the run asks for', async () => {
    const [a, b] = [12 + Math.floor(Math.random() * 900), 7 + Math.floor(Math.random() * 90)];
    const goal = `Work out ${a} times ${b} and write a README.`;
    const core = await memoryCore(goal);
    core.deps.model = offline;
    core.deps.plans = core.runs;
    const schema = { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] };
    Object.assign(core.runs.runs.get(core.runId) ?? {}, { mode: 'multi', output: { schema } });

    await runAgentLoop({ runId: core.runId, agent: 'architect', maxIterations: 5 }, core.deps);
    const plan = core.runs.runs.get(core.runId)?.plan;
    expect(plan?.steps.map((s) => s.action)).toEqual(['calculate', 'create_file']);
    await runAgentLoop({ runId: core.runId, agent: 'coder', maxIterations: 10 }, core.deps);

    expect(core.runs.runs.get(core.runId)?.result).toMatchObject({ output: { total: a * b } });
    expect(new TextDecoder().decode(await core.workspaces.get(core.runId)?.read('README.md'))).toContain(goal);
  });
});

describe('one local server for every example', () => {
  const respond = offlineResponder({ charsPerSecond: 0 });
  const ask = (goal: string) => respond({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: goal }] }, 0);

  it('replays the script a goal names with [script:<name>], and works any other goal itself', async () => {
    expect(await ask('[script:calculator] Multiply.')).toEqual({ turn: readScript('local/scripts/calculator.json')[0] });
    expect(await ask('[script:fork] Multiply.')).toEqual({ turn: readScript('local/scripts/fork.json')[0] });
    expect(await ask('Tell me about yourself.')).toEqual({ turn: offlineTurn({ messages: [{ role: 'user', content: 'Tell me about yourself.' }] }) });
  });

  it('refuses a script it does not have, naming those it has, as a client error that is not retried', async () => {
    const known = readdirSync('local/scripts').map((f) => f.replace(/\.json$/, '')).sort();
    expect(await ask('[script:nope] Multiply.')).toEqual({ status: 400, type: 'invalid_request_error', message: `[script:nope]: there is no such script (the scripts: ${known.join(', ')}).` });
  });

  it('writes at the pace it is given, after a moment to think', async () => {
    const reply = await offlineResponder({ charsPerSecond: 100 })({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'Hi.' }] }, 0);
    expect(reply).toMatchObject({ delayMs: 400, turn: { pacing: { chunkChars: 4, delayMs: 40 } } });
  });
});
