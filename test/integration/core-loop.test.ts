import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../functions/adapters/model/anthropic.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import { textOf, toolResult } from '../../functions/core/model/messages.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { type MessagesApi, type Reply, startMessagesApi } from '../../local/stand-ins/messages-api.js';
import { say, use } from '../support/agents.js';
import { useLocalAws } from '../support/local-aws.js';
import { newRun } from '../support/memory.js';

const aws = useLocalAws();
let api: MessagesApi;
const queue: Reply[] = [];

beforeAll(async () => {
  api = await startMessagesApi(() => queue.shift() ?? { status: 500, type: 'api_error', message: 'script ran out' });
});
afterAll(async () => api.close());

function core() {
  return aws.wiring({ model: new AnthropicProvider({ apiKey: 'test', baseURL: api.url, maxRetries: 0 }) });
}

async function itemCount(): Promise<number> {
  const { dynamo } = awsClients(readEnv(aws.env));
  const out = await dynamo.send(new ScanCommand({ TableName: aws.emulators.table, Select: 'COUNT' }));
  return out.Count ?? 0;
}

describe('the agent core on DynamoDB, S3 and the Messages API', () => {
  it('completes a calculator run with the real SDK over HTTP', async () => {
    const wiring = core();
    await wiring.runs.create(newRun('calc-1', 'What is 6 times 7?'));
    queue.push({ turn: use(['toolu_1', 'calculator', { operation: 'multiply', a: 6, b: 7 }]) }, { turn: say('6 × 7 = 42') });

    const outcome = await runAgentLoop({ runId: 'calc-1', agent: 'single', maxIterations: 5 }, wiring);

    expect(outcome).toEqual({ response: '6 × 7 = 42', iterations: 2, stopReason: 'end_turn' });
    const { messages } = await wiring.conversations.load(conversationIdOf('calc-1', 'single'));
    expect(messages.map((m) => [m.seq, m.role])).toEqual([[0, 'user'], [1, 'assistant'], [2, 'user'], [3, 'assistant']]);
    expect(messages[2]?.content).toEqual([toolResult('toolu_1', '42')]);
    const run = await wiring.runs.get('calc-1');
    expect(run?.iterations).toEqual({ single: 2 });
    expect(run?.usage.outputTokens).toBeGreaterThan(0);
  });

  it('writes a file and reads it back through the tools', async () => {
    const wiring = core();
    await wiring.runs.create(newRun('files-1', 'Write hello.txt then read it.'));
    queue.push(
      { turn: use(['toolu_w', 'write_file', { path: 'notes/hello.txt', content: 'Hello, Stepwise!' }]) },
      { turn: use(['toolu_r', 'read_file', { path: 'notes/hello.txt' }]) },
      { turn: say('The file says hello.') },
    );
    await runAgentLoop({ runId: 'files-1', agent: 'single', maxIterations: 5 }, wiring);

    const { messages } = await wiring.conversations.load(conversationIdOf('files-1', 'single'));
    expect(messages[4]?.content).toEqual([toolResult('toolu_r', 'Hello, Stepwise!')]);
    expect(new TextDecoder().decode(await wiring.workspaceFor('files-1').read('notes/hello.txt'))).toBe('Hello, Stepwise!');
    expect(await aws.allKeys()).toContain('workspaces/files-1/notes/hello.txt');
  });

  it('runs each step twice, as a retry would, with one model call, one tool run and no duplicate item', async () => {
    const wiring = core();
    await wiring.runs.create(newRun('idem-1', 'Write a file.'));
    queue.push({ turn: use(['toolu_1', 'write_file', { path: 'a.txt', content: 'one' }]) }, { turn: say('done') });
    const before = api.requests.length;

    const first = await inferenceStep({ runId: 'idem-1', agent: 'single', iteration: 0 }, wiring);
    const items = await itemCount();
    expect(await inferenceStep({ runId: 'idem-1', agent: 'single', iteration: 0 }, wiring)).toEqual(first);
    expect(api.requests.length - before).toBe(1);
    expect(await itemCount()).toBe(items);

    const input = { runId: 'idem-1', agent: 'single' as const, seq: first.seq, toolUseId: 'toolu_1' };
    expect(await toolStep(input, wiring)).toEqual({ toolUseId: 'toolu_1', isError: false });
    // The file is changed behind the tool's back: a second execution would overwrite it.
    await wiring.workspaceFor('idem-1').write('a.txt', new TextEncoder().encode('changed'));
    expect(await toolStep(input, wiring)).toEqual({ toolUseId: 'toolu_1', isError: false });
    expect(new TextDecoder().decode(await wiring.workspaceFor('idem-1').read('a.txt'))).toBe('changed');
    expect(await itemCount()).toBe(items + 1);

    const last = await inferenceStep({ runId: 'idem-1', agent: 'single', iteration: 1 }, wiring);
    await inferenceStep({ runId: 'idem-1', agent: 'single', iteration: 1 }, wiring);
    expect(api.requests.length - before).toBe(2);
    const { messages } = await wiring.conversations.load(conversationIdOf('idem-1', 'single'));
    expect(messages.map((m) => m.seq)).toEqual([0, 1, 2, 3]);
    expect(textOf(messages[last.seq] ?? { content: [] })).toBe('done');
    expect((await wiring.runs.get('idem-1'))?.iterations).toEqual({ single: 2 });
  });
});
