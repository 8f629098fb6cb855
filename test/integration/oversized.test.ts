import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { ToolRegistry, defaultToolLimits, defineTool } from '../../functions/core/tools/registry.js';
import { builtinTools } from '../../functions/core/tools/builtin/builtin.js';
import { ScriptedModel } from '../../functions/adapters/model/scripted.js';
import { memoryApi } from '../support/api.js';
import { use } from '../support/agents.js';
import { useLocalAws } from '../support/local-aws.js';
import { MemoryWorkspace, newRun } from '../support/memory.js';

const aws = useLocalAws();

describe('oversized inputs and outputs', () => {
  it('refuses a 2 MB goal with a 400 and writes nothing', async () => {
    const api = memoryApi();
    const res = await api.request('POST', '/runs', { goal: 'x'.repeat(2 * 1024 * 1024) });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'ValidationFailed', issues: [{ path: 'goal', message: 'must be at most 100000 characters' }] } } });
    expect(api.writes()).toBe(0);
  });

  it('refuses a 50 MB file write under the configured cap, with an error that says so', async () => {
    const workspace = new MemoryWorkspace();
    const result = await new ToolRegistry(builtinTools).execute(
      { type: 'tool_use', id: 'toolu_big', name: 'write_file', input: { path: 'big.bin', content: 'x'.repeat(50 * 1024 * 1024) } },
      { runId: 'r', workspace, limits: defaultToolLimits },
    );
    expect(result).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_big',
      is_error: true,
      content: 'write_file failed: the content is 52428800 bytes, over the 10485760-byte file limit; split it into smaller files.',
    });
    expect(workspace.files.size).toBe(0);
  });

  it('keeps a 5 MB tool output whole in S3 while the model sees a cut view with a note', async () => {
    const output = 'line of output\n'.repeat(350_000); // 5.25 MB
    const dump = defineTool({ name: 'dump', description: 'Prints a lot.', input: z.object({}), run: async () => output });
    const model = new ScriptedModel([use(['toolu_dump', 'dump', {}])]);
    const wiring = aws.wiring({ model });
    await wiring.runs.create(newRun('big-out', 'Dump.'));
    const step = await inferenceStep({ runId: 'big-out', agent: 'single', iteration: 0 }, wiring);
    await toolStep({ runId: 'big-out', agent: 'single', seq: step.seq, toolUseId: 'toolu_dump' }, { ...wiring, tools: () => new ToolRegistry([dump]) });

    const turn = await wiring.conversations.loadTurn(conversationIdOf('big-out', 'single'), step.seq);
    const view = turn?.results[0]?.content ?? '';
    expect(view.length).toBeLessThan(31_000);
    expect(view.startsWith(output.slice(0, 30_000))).toBe(true);
    expect(view).toMatch(/\[Output truncated: showing the first 30000 of 5250000 characters; the full output is stored with the run\.\]$/);
    const key = (await aws.allKeys()).find((k) => k.includes('big-out') && k.includes('-full'));
    expect(key).toBeDefined();
    const { s3 } = awsClients(readEnv(aws.env));
    const stored = await s3.send(new GetObjectCommand({ Bucket: aws.emulators.bucket, Key: key }));
    expect(await stored.Body?.transformToString()).toBe(output);
  }, 60_000);
});
