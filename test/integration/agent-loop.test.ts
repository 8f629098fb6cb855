import { describe, expect, it } from 'vitest';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();

function executionsOf(runId: string) {
  return local.stack.runtime.list().filter((e) => e.name === runId || e.name.startsWith(`${runId}-`));
}

describe('single-mode runs through the synthesized state machines', () => {
  it('runs a calculator turn to a succeeded run with the answer', async () => {
    const tag = local.book.add('calc', { turn: use(['toolu_1', 'calculator', { operation: 'add', a: 2, b: 3 }]) }, { turn: say('2 + 3 = 5') });
    const run = await local.run(`${tag} What is 2 + 3?`);

    expect(run).toMatchObject({
      mode: 'single',
      status: 'succeeded',
      phase: 'complete',
      result: { response: '2 + 3 = 5', actionsTaken: ['calculator {"operation":"add","a":2,"b":3}'] },
      iterations: { single: 2 },
    });
    expect(run.usage.inputTokens).toBeGreaterThan(0);
    expect(local.book.requests.get('calc')?.[1]?.messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '5', cache_control: { type: 'ephemeral' } }],
    });
    expect(executionsOf(run.runId).map((e) => e.status)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    const event = local.stack.runtime.events.find((e) => (e.detail as { runId: string }).runId === run.runId);
    expect(event).toMatchObject({ source: 'stepwise', detailType: 'Stepwise Run Succeeded', detail: { status: 'succeeded', phase: 'complete', usage: run.usage } });
  });

  it('writes a file, reads it back, and serves it over the API', async () => {
    const tag = local.book.add(
      'files',
      { turn: use(['toolu_w', 'write_file', { path: 'docs/hello.md', content: '# Hello\n' }]) },
      { turn: use(['toolu_r', 'read_file', { path: 'docs/hello.md' }]) },
      { turn: say('Done.') },
    );
    const run = await local.run(`${tag} Write and read a file.`);

    expect(run.status).toBe('succeeded');
    expect((await local.get(`/runs/${run.runId}/files`)).body).toEqual({ items: [{ path: 'docs/hello.md', size: 8 }] });
    const file = await fetch(`${local.stack.url}/runs/${run.runId}/files/docs/hello.md`);
    expect(await file.text()).toBe('# Hello\n');
    const messages = (await local.get(`/runs/${run.runId}/messages`)).body.items as { seq: number; content: unknown[] }[];
    expect(messages[4]?.content).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_r', content: '# Hello\n' }]);
  });

  it('answers parallel calls in one user message, in call order', async () => {
    const tag = local.book.add(
      'parallel',
      {
        turn: use(
          ['toolu_a', 'calculator', { operation: 'multiply', a: 6, b: 7 }],
          ['toolu_b', 'calculator', { operation: 'subtract', a: 10, b: 4 }],
          ['toolu_c', 'list_files', {}],
        ),
      },
      { turn: say('42 and 6') },
    );
    const run = await local.run(`${tag} Two sums at once.`);

    expect(run.status).toBe('succeeded');
    const last = local.book.requests.get('parallel')?.[1]?.messages.at(-1);
    expect((last?.content as { tool_use_id: string; content: string }[]).map((b) => [b.tool_use_id, b.content])).toEqual([
      ['toolu_a', '42'],
      ['toolu_b', '6'],
      ['toolu_c', 'The workspace is empty.'],
    ]);
  });

  it('turns an unknown tool and an invalid input into error results and still succeeds', async () => {
    const tag = local.book.add(
      'bad-tools',
      { turn: use(['toolu_x', 'shell', { cmd: 'ls' }], ['toolu_y', 'calculator', { operation: 'pow', a: 2 }]) },
      { turn: say('I could not do that.') },
    );
    const run = await local.run(`${tag} Use tools badly.`);

    expect(run.status).toBe('succeeded');
    const results = local.book.requests.get('bad-tools')?.[1]?.messages.at(-1)?.content as { is_error?: boolean; content: string }[];
    expect(results.map((r) => r.is_error)).toEqual([true, true]);
    expect(results[0]?.content).toMatch(/^Unknown tool "shell"/);
    expect(results[1]?.content).toMatch(/^Invalid input for calculator: operation: .*; b: /);
  });

  it('fails a run that reaches maxIterations with an error naming the limit', async () => {
    const turns = Array.from({ length: 3 }, (_, i) => ({ turn: use([`toolu_${i}`, 'calculator', { operation: 'add', a: i, b: 1 }]) }));
    const tag = local.book.add('limit', ...turns);
    const run = await local.run(`${tag} Loop forever.`, { maxIterations: 3 });

    expect(run).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: { code: 'MaxIterationsExceeded', message: 'The agent reached the limit of 3 iterations without finishing.', agent: 'single' },
      iterations: { single: 3 },
    });
    const event = local.stack.runtime.events.find((e) => (e.detail as { runId: string }).runId === run.runId);
    expect(event).toMatchObject({ detailType: 'Stepwise Run Failed', detail: { status: 'failed', error: { code: 'MaxIterationsExceeded' } } });
  });

  it('retries a model that is overloaded twice, then succeeds', async () => {
    const overloaded = { status: 529, type: 'overloaded_error', message: 'Overloaded' };
    const tag = local.book.add('overloaded', overloaded, overloaded, overloaded, overloaded, { turn: say('made it') });
    const run = await local.run(`${tag} Survive 529s.`);

    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'made it' } });
    // Two state-machine attempts failed (each after one SDK retry); the third got through.
    expect(local.book.requests.get('overloaded')).toHaveLength(5);
    const [loop] = executionsOf(run.runId).filter((e) => e.name.endsWith('-single'));
    expect(loop?.status).toBe('SUCCEEDED');
  });

  it('fails on a 400 from the model without a retry storm', async () => {
    const tag = local.book.add('bad-request', { status: 400, type: 'invalid_request_error', message: 'max_tokens: too large' });
    const run = await local.run(`${tag} Ask badly.`);

    expect(run).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: { code: 'ModelRequestInvalid', message: 'The model rejected the request (400): max_tokens: too large', agent: 'single' },
    });
    expect(local.book.requests.get('bad-request')).toHaveLength(1);
  });
});

describe('the model a run asks for', () => {
  it('is the one the model is called with, on every step', async () => {
    const tag = local.book.add('model', { turn: use(['toolu_1', 'list_files', {}]) }, { turn: say('ok') });
    const run = await local.run(`${tag} Use another model.`, { model: 'claude-other' });
    expect(run).toMatchObject({ status: 'succeeded', model: 'claude-other' });
    expect(local.book.requests.get('model')?.map((r) => r.model)).toEqual(['claude-other', 'claude-other']);
  });

  it('defaults to the deployment’s model', async () => {
    const tag = local.book.add('default-model', { turn: say('ok') });
    await local.run(`${tag} Default.`);
    expect(local.book.requests.get('default-model')?.map((r) => r.model)).toEqual(['claude-test']);
  });
});
