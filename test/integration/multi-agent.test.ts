import { describe, expect, it } from 'vitest';
import { RunCompletedDetail } from '../../functions/core/runs/events.js';
import type { Run } from '../../functions/core/runs/types.js';
import type { LocalEvent } from '../../local/runtime/runtime.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();

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
});
