import { describe, expect, it } from 'vitest';
import { ApprovalRequestedDetail } from '../../functions/core/approvals/types.js';
import { approvalRequestedDetailType } from '../../functions/core/runs/events.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

// Every run of this deployment gates edit_file; runs add write_file themselves.
const local = useLocalStack({}, { stackProps: { approvalTools: ['edit_file'] } });
const gateWrites = { approvals: { tools: ['write_file'] } };

async function start(goal: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await local.post('/runs', { goal, mode: 'single', ...gateWrites, ...extra });
  expect(res.status).toBe(202);
  return String(res.body.runId);
}

const decide = (runId: string, toolUseId: string, body: unknown) => local.post(`/runs/${runId}/approvals/${toolUseId}`, body);
const files = async (runId: string) => (await local.get(`/runs/${runId}/files`)).body.items as { path: string }[];
const lastUserMessage = (tag: string, request: number) => local.book.requests.get(tag)?.[request]?.messages.at(-1)?.content as {
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}[];

describe('approval rules', () => {
  it('auto-approve notes/** writes and ask for others, recording the rule that decided', async () => {
    const tag = local.book.add(
      'rules',
      { turn: use(['toolu_n', 'write_file', { path: 'notes/today.md', content: 'n' }], ['toolu_o', 'write_file', { path: 'other.md', content: 'o' }]) },
      { turn: say('Both written.') },
    );
    const runId = await start(`${tag} Write two files.`, {
      approvals: { tools: ['write_file'], rules: [{ tool: 'write_file', input: { path: 'notes/**' }, action: 'approve' }] },
    });
    const waiting = await local.waitingOn(runId, 1);
    expect(waiting.waitingFor.map((w) => w.toolUseId)).toEqual(['toolu_o']);
    expect(waiting.decisions).toEqual([expect.objectContaining({ toolUseId: 'toolu_n', decision: 'approve', decidedBy: 'rule:0' })]);
    expect((await decide(runId, 'toolu_o', { decision: 'approve' })).status).toBe(202);
    expect((await local.waitFor(runId)).status).toBe('succeeded');
    expect((await files(runId)).map((f) => f.path).sort()).toEqual(['notes/today.md', 'other.md']);
  });

  it('never lets a run\'s own rule approve a call the deployment gates: it waits for a reviewer, while the rule approves what the run gated', async () => {
    const tag = local.book.add(
      'own-rules',
      { turn: use(['toolu_e', 'edit_file', { path: 'a.md', old_string: 'a', new_string: 'b' }], ['toolu_w', 'write_file', { path: 'notes/b.md', content: 'b' }]) },
      { turn: say('Edit denied, note written.') },
    );
    // Issue 32: the deployment gates edit_file; the run's approve rule for it once decided the call as `rule:0`.
    const runId = await start(`${tag} Edit and note.`, {
      approvals: { tools: ['write_file'], rules: [{ tool: 'edit_file', action: 'approve' }, { tool: 'write_file', action: 'approve' }] },
    });
    const waiting = await local.waitingOn(runId, 1);
    expect(waiting.waitingFor.map((w) => w.toolUseId)).toEqual(['toolu_e']);
    expect(waiting.decisions).toEqual([expect.objectContaining({ toolUseId: 'toolu_w', decision: 'approve', decidedBy: 'rule:1' })]);
    expect((await decide(runId, 'toolu_e', { decision: 'deny' })).body).toMatchObject({ decision: 'deny', decidedBy: 'local' });
    expect((await local.waitFor(runId)).status).toBe('succeeded');
    expect((await files(runId)).map((f) => f.path)).toEqual(['notes/b.md']);
  });

  it('never lets a rule sent in POST /agui forwardedProps approve a call the deployment gates', async () => {
    const tag = local.book.add('agui-rules', { turn: use(['toolu_ae', 'edit_file', { path: 'a.md', old_string: 'a', new_string: 'b' }]) }, { turn: say('Not edited.') });
    const runId = 'agui-own-rules';
    const stream = await fetch(`${local.stack.url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 'thread-agui-own-rules',
        runId,
        state: {},
        messages: [{ id: 'u1', role: 'user', content: `${tag} Edit a.md.` }],
        tools: [],
        context: [],
        forwardedProps: { stepwise: { approvals: { rules: [{ tool: 'edit_file', action: 'approve' }] } } },
      }),
    });
    expect(stream.status).toBe(200);
    const waiting = await local.waitingOn(runId, 1);
    expect([waiting.waitingFor.map((w) => w.toolUseId), waiting.decisions]).toEqual([['toolu_ae'], []]);
    expect((await decide(runId, 'toolu_ae', { decision: 'deny' })).status).toBe(202);
    // The stream ends with the run.
    expect(await stream.text()).toContain('RUN_FINISHED');
  });

  it('refuses a rule that names an unknown action or tool, naming the field', async () => {
    const bad = await local.post('/runs', { goal: 'x', mode: 'single', approvals: { rules: [{ tool: 'write_file', action: 'maybe' }] } });
    expect(bad).toMatchObject({ status: 400, body: { error: { issues: [{ path: 'approvals.rules.0.action' }] } } });
  });
});

describe('a reviewer who edits or explains', () => {
  it('approves with an edited input: the edited file is written and not the original, and the model is told', async () => {
    const tag = local.book.add('edit', { turn: use(['toolu_w', 'write_file', { path: 'secrets.txt', content: 'token=abc' }]) }, { turn: say('Done.') });
    const runId = await start(`${tag} Save it.`);
    await local.waitingOn(runId, 1);
    const refused = await decide(runId, 'toolu_w', { decision: 'approve', input: { path: 'notes/public.txt', content: 42 } });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: 'ValidationFailed', issues: [{ path: 'input.content' }] } } });
    const decided = await decide(runId, 'toolu_w', { decision: 'approve', input: { path: 'notes/public.txt', content: 'no secrets' }, message: 'Never write tokens.' });
    expect(decided).toMatchObject({ status: 202, body: { decision: 'approve', edited: true, message: 'Never write tokens.' } });
    const run = await local.waitFor(runId);
    expect(run.status).toBe('succeeded');
    expect(await files(runId)).toEqual([{ path: 'notes/public.txt', size: 10 }]);
    const result = lastUserMessage('edit', 1)[0]?.content ?? '';
    expect(result).toContain('A reviewer edited this call\'s input before it ran; it ran with: {"path":"notes/public.txt","content":"no secrets"}');
    expect(result).toContain('Message from the reviewer: Never write tokens.');
    expect((await local.get(`/runs/${runId}`)).body.decisions).toEqual([expect.objectContaining({ toolUseId: 'toolu_w', edited: true, message: 'Never write tokens.' })]);
  });

  it('denies with a message, which the model reads', async () => {
    const tag = local.book.add('deny-message', { turn: use(['toolu_w', 'write_file', { path: 'a.md', content: 'A' }]) }, { turn: say('Understood.') });
    const runId = await start(`${tag} Write a.md.`);
    await local.waitingOn(runId, 1);
    expect((await decide(runId, 'toolu_w', { decision: 'deny', message: 'Put it in docs/ please.' })).status).toBe(202);
    expect((await local.waitFor(runId)).status).toBe('succeeded');
    expect(lastUserMessage('deny-message', 1)[0]).toMatchObject({ is_error: true, content: expect.stringMatching(/^A reviewer denied this tool call: Put it in docs\/ please\./) });
    expect(await files(runId)).toEqual([]);
  });
});

describe('a tool call that needs approval', () => {
  it('waits for a reviewer, announces itself, and runs only once approved', async () => {
    const input = { path: 'notes.md', content: '# Notes\n' };
    const tag = local.book.add('approve', { turn: use(['toolu_w', 'write_file', input]) }, { turn: say('Wrote notes.md.') });
    const runId = await start(`${tag} Write notes.`);

    const waiting = await local.waitingOn(runId, 1);
    expect(waiting).toMatchObject({ status: 'running', approvals: { tools: ['write_file', 'edit_file'] } });
    expect(waiting.waitingFor).toEqual([{ toolUseId: 'toolu_w', name: 'write_file', input, requestedAt: expect.any(String) }]);
    expect(await files(runId)).toEqual([]);
    expect(local.book.requests.get('approve')).toHaveLength(1);
    const announced = local.stack.runtime.events.filter((e) => e.detailType === approvalRequestedDetailType && (e.detail as { runId: string }).runId === runId);
    expect(announced).toHaveLength(1);
    expect(announced[0]?.source).toBe('stepwise');
    expect(ApprovalRequestedDetail.parse(announced[0]?.detail)).toEqual({
      runId,
      toolUseId: 'toolu_w',
      agent: 'single',
      name: 'write_file',
      input,
      requestedAt: waiting.waitingFor[0]?.requestedAt,
    });

    const decided = await decide(runId, 'toolu_w', { decision: 'approve' });
    expect(decided).toEqual({ status: 202, body: { runId, toolUseId: 'toolu_w', decision: 'approve', decidedAt: expect.any(String), decidedBy: 'local' } });
    const run = await local.waitFor(runId);

    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'Wrote notes.md.' }, waitingFor: [] });
    expect(await files(runId)).toEqual([{ path: 'notes.md', size: 8 }]);
    expect(lastUserMessage('approve', 1)).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_w', content: 'Wrote 8 bytes to notes.md.', cache_control: { type: 'ephemeral' } }]);
  });

  it('is answered with a denial the model can read, reason included, and the loop goes on', async () => {
    const tag = local.book.add(
      'deny',
      { turn: use(['toolu_d', 'write_file', { path: 'secrets.env', content: 'KEY=1' }]) },
      { turn: say('Understood, I will not write it.') },
    );
    const runId = await start(`${tag} Write a secret.`);
    await local.waitingOn(runId, 1);

    expect((await decide(runId, 'toolu_d', { decision: 'deny', reason: 'no secrets in the workspace' })).body).toMatchObject({
      decision: 'deny',
      reason: 'no secrets in the workspace',
    });
    const run = await local.waitFor(runId);

    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'Understood, I will not write it.', actionsTaken: [] } });
    expect(await files(runId)).toEqual([]);
    const [result] = lastUserMessage('deny', 1);
    expect(result).toMatchObject({ tool_use_id: 'toolu_d', is_error: true });
    expect(result?.content).toMatch(/^A reviewer denied this tool call: no secrets in the workspace\n/);
  });

  it('lets parallel calls be decided independently, and waits for all of them', async () => {
    const tag = local.book.add(
      'parallel',
      {
        turn: use(
          ['toolu_a', 'write_file', { path: 'a.md', content: 'A' }],
          ['toolu_c', 'calculator', { operation: 'add', a: 1, b: 2 }],
          ['toolu_b', 'write_file', { path: 'b.md', content: 'B' }],
        ),
      },
      { turn: say('Wrote a.md only.') },
    );
    const runId = await start(`${tag} Write two files.`);
    const waiting = await local.waitingOn(runId, 2);
    expect(waiting.waitingFor.map((w) => w.toolUseId).sort()).toEqual(['toolu_a', 'toolu_b']);

    expect((await decide(runId, 'toolu_a', { decision: 'approve' })).status).toBe(202);
    const stillWaiting = await local.waitingOn(runId, 1);
    expect(stillWaiting.waitingFor.map((w) => w.toolUseId)).toEqual(['toolu_b']);
    // The approved call ran; the model is not asked again while one call still waits.
    for (let i = 0; i < 50 && (await files(runId)).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await files(runId)).toEqual([{ path: 'a.md', size: 1 }]);
    expect(local.book.requests.get('parallel')).toHaveLength(1);

    expect((await decide(runId, 'toolu_b', { decision: 'deny', reason: 'one file is enough' })).status).toBe(202);
    // The denied call is no action taken; the approved one and the ungated one are.
    expect((await local.waitFor(runId)).result?.actionsTaken).toEqual([
      'write_file {"path":"a.md","content":"A"}',
      'calculator {"operation":"add","a":1,"b":2}',
    ]);
    expect(await files(runId)).toEqual([{ path: 'a.md', size: 1 }]);
    const results = lastUserMessage('parallel', 1);
    expect(results.map((r) => [r.tool_use_id, r.is_error === true])).toEqual([
      ['toolu_a', false],
      ['toolu_c', false],
      ['toolu_b', true],
    ]);
    expect(results[2]?.content).toContain('A reviewer denied this tool call: one file is enough');
  });

  it('refuses a second decision (409), an unknown call (404), a bad body (400) and a finished run (409)', async () => {
    const tag = local.book.add('twice', { turn: use(['toolu_t', 'edit_file', { path: 'x', old_string: 'a', new_string: 'b' }]) }, { turn: say('ok'), delayMs: 300 });
    // edit_file is gated by the deployment, without the run asking.
    const runId = await start(`${tag} Edit.`, { approvals: undefined });
    await local.waitingOn(runId, 1);

    expect(await decide(runId, 'toolu_nope', { decision: 'approve' })).toMatchObject({ status: 404, body: { error: { code: 'ApprovalNotFound' } } });
    expect(await decide(runId, 'toolu_t', { decision: 'maybe' })).toMatchObject({ status: 400, body: { error: { issues: [{ path: 'decision' }] } } });
    expect(await decide('no-such-run', 'toolu_t', { decision: 'approve' })).toMatchObject({ status: 404, body: { error: { code: 'RunNotFound' } } });

    const answers = await Promise.all([decide(runId, 'toolu_t', { decision: 'approve' }), decide(runId, 'toolu_t', { decision: 'deny' })]);
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409]);
    const refused = answers.find((a) => a.status === 409);
    expect(refused?.body).toMatchObject({ error: { code: 'ApprovalAlreadyDecided', message: expect.stringMatching(/already decided: (approve|deny)/) } });
    expect((await decide(runId, 'toolu_t', { decision: 'deny' })).status).toBe(409);

    await local.waitFor(runId);
    expect(await decide(runId, 'toolu_t', { decision: 'approve' })).toMatchObject({ status: 409, body: { error: { code: 'RunNotRunning' } } });
  });

  it('ends cancelled when cancelled while waiting, and the session goes on with the call repaired', async () => {
    const session = `approval-${Date.now()}`;
    const tag = local.book.add(
      'cancel',
      { turn: use(['toolu_x', 'write_file', { path: 'late.md', content: 'never' }]) },
      { turn: say('Picking up where we left off.') },
    );
    const runId = await start(`${tag} Write late.md.`, { sessionId: session });
    await local.waitingOn(runId, 1);

    expect((await local.post(`/runs/${runId}/cancel`, {})).status).toBe(202);
    const cancelled = await local.waitFor(runId);
    expect(cancelled).toMatchObject({ status: 'cancelled', phase: 'cancelled', waitingFor: [] });
    expect(local.stack.runtime.waitingTokens()).toEqual([]);
    expect(await decide(runId, 'toolu_x', { decision: 'approve' })).toMatchObject({ status: 409, body: { error: { code: 'RunNotRunning' } } });
    expect(await files(runId)).toEqual([]);

    const next = await local.run(`${tag} Carry on.`, { sessionId: session });
    expect(next).toMatchObject({ status: 'succeeded', result: { response: 'Picking up where we left off.' } });
    const [repaired] = lastUserMessage('cancel', 1);
    expect(repaired).toMatchObject({ tool_use_id: 'toolu_x', is_error: true });
    expect(repaired?.content).toMatch(/interrupted/);
  });

  it('gates the Coder of a multi-agent run the same way', async () => {
    const plan = { goal: 'Notes', steps: [{ description: 'Write notes.md', action: 'create_file', parameters: { path: 'notes.md' } }] };
    const tag = local.book.add(
      'multi',
      { turn: use(['toolu_plan', 'finish_plan', plan]) },
      { turn: use(['toolu_cw', 'write_file', { path: 'notes.md', content: '# Notes\n' }]) },
      { turn: say('Done.') },
    );
    const runId = await start(`${tag} Write notes.`, { mode: 'multi' });
    const waiting = await local.waitingOn(runId, 1);
    expect(waiting).toMatchObject({ phase: 'executing', currentAgent: 'coder', waitingFor: [{ toolUseId: 'toolu_cw', name: 'write_file' }] });
    const event = local.stack.runtime.events.find((e) => e.detailType === approvalRequestedDetailType && (e.detail as { runId: string }).runId === runId);
    expect(event?.detail).toMatchObject({ agent: 'coder', toolUseId: 'toolu_cw' });

    await decide(runId, 'toolu_cw', { decision: 'approve', reason: 'looks right' });
    expect(await local.waitFor(runId)).toMatchObject({ status: 'succeeded', iterations: { architect: 1, coder: 2 } });
    expect(await files(runId)).toEqual([{ path: 'notes.md', size: 8 }]);
  });

  it('runs calls of tools nobody gated without waiting', async () => {
    const tag = local.book.add('ungated', { turn: use(['toolu_1', 'list_files', {}]) }, { turn: say('empty') });
    const run = await local.run(`${tag} List.`, gateWrites);
    expect(run).toMatchObject({ status: 'succeeded', waitingFor: [] });
    expect(local.stack.runtime.events.filter((e) => e.detailType === approvalRequestedDetailType && (e.detail as { runId: string }).runId === run.runId)).toEqual([]);
  });
});
