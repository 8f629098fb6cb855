import { InvokeCommand, LambdaClient, TooManyRequestsException } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LambdaToolSource } from '../../functions/adapters/tools/lambda.js';
import type { ExternalTool, LambdaToolConfig } from '../../functions/core/tools/external/types.js';
import { type LocalLambdaApi, startLambdaApi } from '../../local/stand-ins/lambda-api.js';
import type { WireRequest } from '../../local/stand-ins/messages-api.js';
import type { RunView } from '../../functions/api/schemas.js';
import { marked, say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const wordCount: LambdaToolConfig = {
  name: 'word_count',
  description: 'Counts the words of a text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string', minLength: 1 } }, required: ['text'], additionalProperties: false },
  functionName: 'word-count',
};
const tools: LambdaToolConfig[] = [
  wordCount,
  { name: 'shout', description: 'Upper-cases a text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, functionName: 'arn:aws:lambda:us-east-1:123456789012:function:shout' },
  { name: 'crash', description: 'Always throws.', inputSchema: { type: 'object' }, functionName: 'crash' },
  { name: 'refuse', description: 'Answers an error.', inputSchema: { type: 'object' }, functionName: 'refuse' },
];

/** What word-count was told of each call besides its input (its client context). */
const callKeys: unknown[] = [];
const local = useLocalStack(
  { STEPWISE_LAMBDA_TOOLS: JSON.stringify(tools) },
  {
    functions: {
      'word-count': (event, context) => {
        callKeys.push(context.clientContext?.custom);
        return { words: String((event as { text: string }).text).split(/\s+/).filter(Boolean).length };
      },
      shout: (event) => String((event as { text?: string }).text ?? '').toUpperCase(),
      crash: () => {
        throw new TypeError('cannot read properties of undefined');
      },
      refuse: () => ({ isError: true, content: 'quota used up for today' }),
    },
  },
);

type Result = { tool_use_id: string; content: string; is_error?: boolean };
const resultsOf = (request: WireRequest | undefined) =>
  (request?.messages.at(-1)?.content as Result[]).map(({ tool_use_id, content, is_error }) => ({ tool_use_id, content, is_error }));

describe('Lambda tools in a run', () => {
  it('invokes the function with the validated input, refuses invalid input without invoking, and reports function errors', async () => {
    const tag = local.book.add(
      'lambda',
      {
        turn: use(
          ['toolu_1', 'word_count', { text: 'one two three' }],
          ['toolu_2', 'word_count', { words: 'missing text' }],
          ['toolu_3', 'shout', { text: 'hi' }],
          ['toolu_4', 'crash', {}],
          ['toolu_5', 'refuse', {}],
        ),
      },
      { turn: say('Counted.') },
    );
    const run = await local.run(`${tag} Count words.`);

    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'Counted.' } });
    const [first, second] = local.book.requests.get('lambda') ?? [];
    expect((first?.tools as { name: string }[]).map((t) => t.name).slice(-4)).toEqual(['word_count', 'shout', 'crash', 'refuse']);
    expect((first?.tools as unknown[]).at(-4)).toEqual({ name: 'word_count', description: wordCount.description, input_schema: wordCount.inputSchema });
    expect(resultsOf(second)).toEqual([
      { tool_use_id: 'toolu_1', content: marked('word_count', '{"words":3}'), is_error: undefined },
      {
        tool_use_id: 'toolu_2',
        content: "Invalid input for word_count: (input): must have required property 'text'; (input): must NOT have additional properties (words)",
        is_error: true,
      },
      { tool_use_id: 'toolu_3', content: marked('shout', 'HI'), is_error: undefined },
      { tool_use_id: 'toolu_4', content: marked('crash', 'crash failed: TypeError: cannot read properties of undefined'), is_error: true },
      { tool_use_id: 'toolu_5', content: marked('refuse', 'quota used up for today'), is_error: true },
    ]);
    // Only the valid call reached word-count, with exactly its input, told for whom it runs.
    expect(local.stack.lambdas.invocations.get('word-count')).toEqual([{ text: 'one two three' }]);
    expect(callKeys).toEqual([{ runId: run.runId, toolUseId: 'toolu_1', owner: 'local' }]);
  });
});

describe('a ruled Lambda tool', () => {
  it('is denied by a rule that matches the call: the function never runs and the model reads the denial; a call no rule matches runs', async () => {
    const tag = local.book.add(
      'ruled',
      { turn: use(['toolu_s', 'word_count', { text: 'secret launch plan' }], ['toolu_f', 'word_count', { text: 'fine words' }]) },
      { turn: say('Counted the fine one.') },
    );
    const rules = [{ tool: 'word_count', input: { text: 'secret*' }, action: 'deny' }];
    const run = await local.run(`${tag} Count words.`, { approvals: { rules } });

    expect(run).toMatchObject({ status: 'succeeded', approvals: { tools: [], rules }, waitingFor: [] });
    expect((run as unknown as RunView).decisions).toEqual([
      expect.objectContaining({ toolUseId: 'toolu_s', decision: 'deny', decidedBy: 'rule:0' }),
      expect.objectContaining({ toolUseId: 'toolu_f', decision: 'approve', decidedBy: 'policy' }),
    ]);
    const invoked = local.stack.lambdas.invocations.get('word-count') ?? [];
    expect(invoked).toContainEqual({ text: 'fine words' });
    expect(invoked).not.toContainEqual({ text: 'secret launch plan' });
    const [denied, counted] = resultsOf(local.book.requests.get('ruled')?.[1]);
    expect(denied).toMatchObject({ tool_use_id: 'toolu_s', is_error: true, content: expect.stringMatching(/^A reviewer denied this tool call\.\nThe call was not run\./) });
    expect(counted).toEqual({ tool_use_id: 'toolu_f', content: marked('word_count', '{"words":2}'), is_error: undefined });
  });
});

describe('the Lambda tool adapter', () => {
  let api: LocalLambdaApi;
  beforeAll(async () => {
    api = await startLambdaApi();
  });
  afterAll(async () => api?.close());
  const client = () => new LambdaClient({ region: 'us-east-1', endpoint: api.url, credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1 });

  it('hands the function the step\'s runId and toolUseId in its client context, to recognize a retried step', async () => {
    const seen: unknown[] = [];
    api.register('context-echo', (_event, context) => {
      seen.push(context.clientContext);
      return { words: 2 };
    });
    const source = new LambdaToolSource([{ ...wordCount, functionName: 'context-echo' }], client());
    const [tool] = await source.list();
    expect(await source.call(tool as ExternalTool, { text: 'a b' }, { runId: 'run-1', toolUseId: 'toolu_1' })).toEqual({ content: '{"words":2}', isError: false });
    expect(seen).toEqual([{ custom: { runId: 'run-1', toolUseId: 'toolu_1' } }]);
  });

  it('tells the function the run\'s owner and tenant in its client context, never in its event, so it acts for that caller', async () => {
    const seen: unknown[] = [];
    const events: unknown[] = [];
    api.register('whoami', (event, context) => {
      events.push(event);
      seen.push(context.clientContext);
      return 'ok';
    });
    const source = new LambdaToolSource([{ ...wordCount, functionName: 'whoami' }], client());
    const [tool] = await source.list();
    const context = { runId: 'run-2', toolUseId: 'toolu_2', owner: { principal: 'https://issuer.example|alice', tenant: 'acme' } };
    expect(await source.call(tool as ExternalTool, { text: 'a b' }, context)).toEqual({ content: 'ok', isError: false });
    expect(seen).toEqual([{ custom: { runId: 'run-2', toolUseId: 'toolu_2', owner: 'https://issuer.example|alice', tenant: 'acme' } }]);
    expect(events).toEqual([{ text: 'a b' }]);
  });

  it('answers a function that does not exist as an error result', async () => {
    const source = new LambdaToolSource([wordCount], client());
    const [tool] = await source.list();
    expect(tool && (await source.call(tool, { text: 'a b' }))).toEqual({
      content: 'word_count could not be invoked (ResourceNotFoundException); it is not usable in this run.',
      isError: true,
    });
  });

  it('answers a function that does not return in time as an error result', async () => {
    api.register('word-count', () => new Promise((r) => setTimeout(() => r({ words: 2 }), 2_000)));
    const source = new LambdaToolSource([wordCount], client(), { timeoutMs: 200 });
    const [tool] = await source.list();
    expect(tool && (await source.call(tool, { text: 'a b' }))).toEqual({ content: 'word_count could not be invoked: no answer within 0.2 s', isError: true });
  });

  it('throws throttling that outlasts the SDK retries as ToolUnavailable, for the state machine to retry', async () => {
    const lambda = new LambdaClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const mock = mockClient(lambda);
    mock.on(InvokeCommand).rejects(new TooManyRequestsException({ message: 'Rate exceeded', $metadata: { httpStatusCode: 429 } }));
    const source = new LambdaToolSource([wordCount], lambda);
    const [tool] = await source.list();
    await expect(source.call(tool as ExternalTool, { text: 'a b' })).rejects.toMatchObject({ name: 'ToolUnavailable', message: expect.stringContaining('Rate exceeded') });
    mock.restore();
  });

  it('answers an invocation AWS refuses (access, a missing function) with an error result that names no ARN', async () => {
    const lambda = new LambdaClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const mock = mockClient(lambda);
    const denied = Object.assign(new Error('User: arn:aws:sts::123456789012:assumed-role/ToolRole/x is not authorized'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 403 } });
    mock.on(InvokeCommand).rejects(denied);
    const warnings: string[] = [];
    const source = new LambdaToolSource([wordCount], lambda, { warn: (message) => warnings.push(message) });
    const [tool] = await source.list();
    expect(await source.call(tool as ExternalTool, { text: 'a b' })).toEqual({
      content: 'word_count could not be invoked (AccessDeniedException); it is not usable in this run.',
      isError: true,
    });
    expect(warnings).toEqual([expect.stringContaining('arn:aws:sts::123456789012')]);
    mock.restore();
  });

  it('leaves out a tool whose schema does not compile, and keeps the others', async () => {
    const warnings: string[] = [];
    const broken: LambdaToolConfig = { ...wordCount, name: 'broken', inputSchema: { type: 'object', properties: { a: { type: 'nope' } } } };
    const source = new LambdaToolSource([broken, wordCount], client(), { warn: (message) => warnings.push(message) });
    expect((await source.list()).map((t) => t.name)).toEqual(['word_count']);
    expect(warnings).toEqual([expect.stringMatching(/inputSchema of tool "broken" is not a valid JSON Schema/)]);
  });

  it('takes a draft-07 schema, as most generators write them', async () => {
    const draft7 = { ...wordCount, inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', ...wordCount.inputSchema } };
    const source = new LambdaToolSource([draft7], client());
    const [tool] = await source.list();
    expect(await source.call(tool as ExternalTool, { text: '' })).toMatchObject({ isError: true, content: expect.stringContaining('/text') });
  });
});
