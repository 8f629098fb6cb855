import { describe, expect, it } from 'vitest';
import { RunCompletedDetail } from '../../functions/core/runs/events.js';
import type { Run } from '../../functions/core/runs/types.js';
import type { LocalEvent } from '../../local/runtime/runtime.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';
import { type ReceivedSpan, useOtlpReceiver } from '../support/otlp-receiver.js';

// The stack's functions send their spans to an in-process OTLP receiver (docs/traces.md).
const env: Record<string, string> = {};
const otlp = useOtlpReceiver(env);
const local = useLocalStack(env);

const plan = {
  goal: 'Create a greeting module and its README',
  steps: [
    { description: 'Write the greeting function', action: 'create_file', parameters: { path: 'src/greet.ts' } },
    { description: 'Document it', action: 'create_file', parameters: { path: 'README.md' } },
  ],
};

async function startMulti(goal: string, extra: Record<string, unknown> = {}): Promise<string> {
  const started = await local.post('/runs', { goal, ...extra });
  expect(started.status).toBe(202);
  return String(started.body.runId);
}

describe('multi-agent runs: the Architect plans, the Coder builds', () => {
  it('runs a plan of two steps into two files, with the plan, phases and actions on the run', async () => {
    const tag = local.book.add(
      'full',
      { turn: use(['toolu_ls', 'list_files', {}]) },
      { turn: use(['toolu_plan', 'finish_plan', plan]) },
      { turn: use(['toolu_w1', 'write_file', { path: 'src/greet.ts', content: 'export const greet = (n: string) => `Hello, ${n}!`;\n' }]) },
      { turn: use(['toolu_w2', 'write_file', { path: 'README.md', content: '# greet\n' }]) },
      { turn: say('Wrote src/greet.ts and README.md.') },
    );
    const run = await local.waitFor(await startMulti(`${tag} Build a greeting module.`));

    expect(run).toMatchObject({
      mode: 'multi',
      status: 'succeeded',
      phase: 'complete',
      plan,
      iterations: { architect: 2, coder: 3 },
      result: {
        response: 'Wrote src/greet.ts and README.md.',
        actionsTaken: [expect.stringMatching(/^write_file \{"path":"src\/greet.ts"/), 'write_file {"path":"README.md","content":"# greet\\n"}'],
      },
    });
    expect(run.currentAgent).toBeUndefined();
    expect(run.error).toBeUndefined();
    expect((await local.get(`/runs/${run.runId}/files`)).body.items).toEqual([
      { path: 'README.md', size: 8 },
      { path: 'src/greet.ts', size: 52 },
    ]);
    expect(await (await fetch(`${local.stack.url}/runs/${run.runId}/files/README.md`)).text()).toBe('# greet\n');

    // The Architect worked first (two model calls; the accepted plan ended its loop), then the
    // Coder, whose first message carries the plan.
    const requests = local.book.requests.get('full') ?? [];
    expect(requests.map((r) => r.tools?.map((t) => (t as { name: string }).name).join(','))).toEqual([
      'finish_plan,read_file,list_files',
      'finish_plan,read_file,list_files',
      'read_file,write_file,list_files,edit_file,calculator',
      'read_file,write_file,list_files,edit_file,calculator',
      'read_file,write_file,list_files,edit_file,calculator',
    ]);
    const opening = JSON.stringify(requests[2]?.messages[0]);
    expect(opening).toContain("The Architect's plan");
    expect(opening).toContain('[create_file] Write the greeting function');
    expect(opening).toContain('parameters: {\\"path\\":\\"src/greet.ts\\"}');

    const transcript = (await local.get(`/runs/${run.runId}/messages`)).body.items as { agent: string }[];
    expect(transcript.map((m) => m.agent)).toEqual([...Array(4).fill('architect'), ...Array(6).fill('coder')]);
    const event = local.stack.runtime.events.find((e) => (e.detail as { runId: string }).runId === run.runId);
    expect(event).toMatchObject({ detailType: 'Stepwise Run Succeeded', detail: { status: 'succeeded', phase: 'complete' } });
  });

  it('fails with NoPlanProduced when the Architect never calls finish_plan', async () => {
    const tag = local.book.add('no-plan', { turn: say('I think you should write some code.') });
    const run = await local.waitFor(await startMulti(`${tag} Plan nothing.`));

    expect(run).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: { code: 'NoPlanProduced', message: expect.stringContaining('finish_plan'), agent: 'architect' },
    });
    expect(run.plan).toBeUndefined();
    expect(local.stack.runtime.list().some((e) => e.name === `${run.runId}-coder`)).toBe(false);
  });

  it('lets the Architect correct an invalid plan, and tells it which field was wrong', async () => {
    const invalid = { goal: 'x', steps: [{ description: 'Write it', action: '' }] };
    const tag = local.book.add(
      'replan',
      { turn: use(['toolu_p1', 'finish_plan', invalid]) },
      { turn: use(['toolu_p2', 'finish_plan', plan]) },
      { turn: say('Nothing to do after all.') },
    );
    const run = await local.waitFor(await startMulti(`${tag} Plan twice.`));

    expect(run).toMatchObject({ status: 'succeeded', plan, iterations: { architect: 2, coder: 1 } });
    const feedback = local.book.requests.get('replan')?.[1]?.messages.at(-1)?.content as { content: string; is_error: boolean }[];
    expect(feedback[0]).toMatchObject({ is_error: true, content: 'Invalid input for finish_plan: steps.0.action: must not be empty' });
  });

  it('fails with the Coder named when the Coder reaches maxIterations', async () => {
    const tag = local.book.add(
      'coder-limit',
      { turn: use(['toolu_p', 'finish_plan', plan]) },
      ...Array.from({ length: 3 }, (_, i) => ({ turn: use([`toolu_c${i}`, 'list_files', {}]) })),
    );
    const run = await local.waitFor(await startMulti(`${tag} Never finish coding.`, { maxIterations: 3 }));

    expect(run).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: { code: 'MaxIterationsExceeded', message: 'The agent reached the limit of 3 iterations without finishing.', agent: 'coder' },
      iterations: { architect: 1, coder: 3 },
    });
    const event = local.stack.runtime.events.find((e) => (e.detail as { runId: string }).runId === run.runId);
    expect(event).toMatchObject({ detailType: 'Stepwise Run Failed', detail: { error: { code: 'MaxIterationsExceeded', agent: 'coder' } } });
  });

  it('cancels a run mid-way: the executions stop, the run ends cancelled and says so on the bus once', async () => {
    const tag = local.book.add(
      'cancel',
      { turn: use(['toolu_p', 'finish_plan', plan]) },
      { turn: use(['toolu_w', 'write_file', { path: 'a.txt', content: 'a' }]), delayMs: 1_500 },
    );
    const runId = await startMulti(`${tag} Take your time.`);
    // Wait until the Coder is at work, then cancel.
    for (let i = 0; i < 200; i++) {
      const { body } = await local.get(`/runs/${runId}`);
      if ((body as unknown as Run).currentAgent === 'coder') break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const cancelled = await local.post(`/runs/${runId}/cancel`, {});
    expect(cancelled).toEqual({ status: 202, body: { runId, status: 'cancelled', phase: 'cancelled' } });
    await local.stack.runtime.idle();

    const run = (await local.get(`/runs/${runId}`)).body as unknown as Run;
    expect(run).toMatchObject({ status: 'cancelled', phase: 'cancelled' });
    // Cancel is repeatable (a retry after a failed stop or announcement); a finished run answers 409.
    expect((await local.post(`/runs/${runId}/cancel`, {})).status).toBe(202);
    await local.stack.runtime.idle();
    expect(local.stack.runtime.list().filter((e) => e.name.startsWith(runId)).map((e) => [e.name.replace(runId, ''), e.status])).toEqual([
      ['', 'ABORTED'],
      ['-architect', 'SUCCEEDED'],
      ['-coder', 'ABORTED'],
      // The announcement: a stopped execution announces nothing itself.
      ['-cancelled', 'SUCCEEDED'],
    ]);
    const events = (await local.get('/_local/events')).body.items as LocalEvent[];
    const announced = events.filter((e) => (e.detail as { runId?: string }).runId === runId && e.detailType.startsWith('Stepwise Run'));
    expect(announced.map((e) => [e.source, e.detailType])).toEqual([['stepwise', 'Stepwise Run Cancelled']]);
    const counted = { inputTokens: expect.any(Number), outputTokens: expect.any(Number), cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    expect(RunCompletedDetail.parse(announced[0]?.detail)).toEqual({ runId, status: 'cancelled', phase: 'cancelled', usage: counted });
  });

  it('is one trace, a child of the caller’s traceparent: the run, each agent, each model call and each tool call, with their GenAI attributes', async () => {
    const tag = local.book.add(
      'traced',
      { turn: use(['toolu_tp', 'finish_plan', plan]) },
      { turn: use(['toolu_tw', 'write_file', { path: 'a.txt', content: 'a' }]) },
      { turn: say('Wrote a.txt.') },
    );
    const caller = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };
    const started = await fetch(`${local.stack.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${caller.traceId}-${caller.spanId}-01` },
      body: JSON.stringify({ goal: `${tag} Write a.txt.` }),
    });
    const { runId } = (await started.json()) as { runId: string };
    const run = await local.waitFor(runId);
    expect(run.status).toBe('succeeded');
    // The run's own span is sent when its end is announced (asynchronously, as the rule delivers it).
    const deadline = Date.now() + 10_000;
    while (!otlp.receiver.spans.some((s) => s.name.startsWith('invoke_workflow') && s.attributes['stepwise.run.id'] === runId) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const spans = otlp.receiver.spans.filter((s) => s.attributes['stepwise.run.id'] === runId);
    // One trace: the caller's.
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([caller.traceId]));
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentName = (s: ReceivedSpan) => (s.parentSpanId === caller.spanId ? 'caller' : byId.get(s.parentSpanId ?? '')?.name);
    expect(spans.map((s) => [s.name, parentName(s)]).sort()).toEqual(
      [
        ['invoke_workflow plan-and-build', 'caller'],
        ['invoke_agent architect', 'invoke_workflow plan-and-build'],
        ['invoke_agent coder', 'invoke_workflow plan-and-build'],
        ['chat claude-test', 'invoke_agent architect'],
        ['execute_tool finish_plan', 'invoke_agent architect'],
        ['chat claude-test', 'invoke_agent coder'],
        ['execute_tool write_file', 'invoke_agent coder'],
        ['chat claude-test', 'invoke_agent coder'],
      ].sort(),
    );
    const chats = spans.filter((s) => s.name.startsWith('chat'));
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.request.model': 'claude-test',
        'gen_ai.response.model': expect.any(String),
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
        'gen_ai.conversation.id': expect.stringMatching(new RegExp(`^run/${runId}/(architect|coder)$`)),
      });
      // No content without the capture setting.
      expect(chat.attributes).not.toHaveProperty('gen_ai.input.messages');
      expect(chat.attributes).not.toHaveProperty('gen_ai.output.messages');
    }
    expect(chats.map((c) => c.attributes['gen_ai.response.finish_reasons'])).toEqual(expect.arrayContaining([['tool_use'], ['end_turn']]));
    // The usage of the run's model calls adds up to the run's.
    expect(chats.reduce((sum, c) => sum + Number(c.attributes['gen_ai.usage.input_tokens']), 0)).toBe(run.usage.inputTokens);
    expect(spans.find((s) => s.name === 'execute_tool write_file')?.attributes).toMatchObject({ 'gen_ai.tool.name': 'write_file', 'gen_ai.tool.call.id': 'toolu_tw', 'gen_ai.agent.name': 'coder' });
    expect(spans.find((s) => s.name === 'invoke_agent coder')?.attributes).toMatchObject({ 'gen_ai.agent.name': 'coder', 'gen_ai.operation.name': 'invoke_agent' });
    // Each agent's span holds its calls.
    for (const s of spans.filter((x) => x.name.startsWith('chat') || x.name.startsWith('execute_tool'))) {
      const agent = byId.get(s.parentSpanId ?? '')!;
      expect(s.startMs).toBeGreaterThanOrEqual(agent.startMs);
    }
  });
});
