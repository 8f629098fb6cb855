import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  announcedInputChars,
  type Approval,
  ApprovalAlreadyDecided,
  ApprovalDecided,
  approvalInputChars,
  ApprovalNotFound,
  type ApprovalRule,
  InvalidEditedInput,
} from '../../functions/core/approvals/types.js';
import { ruleFor } from '../../functions/core/approvals/policy.js';
import { awaitDecision, requestApproval } from '../../functions/core/approvals/request.js';
import { decideApproval } from '../../functions/core/approvals/decide.js';
import { decisionsOf, waitingFor } from '../../functions/core/approvals/views.js';
import { denialMessage, settleApproval } from '../../functions/core/approvals/gate.js';
import { StepStateInvalid } from '../../functions/core/errors/errors.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { memoryCore, say, use } from '../support/agents.js';
import { MemoryApprovalStore, RecordingTokens } from '../support/memory.js';

const call = { runId: 'run-1', agent: 'single' as const, seq: 1, toolUseId: 'toolu_w' };
const input = { path: 'a.md', content: 'A' };

/** A run that gates write_file, whose model has just called it. */
async function gatedCore(turn = use(['toolu_w', 'write_file', input])) {
  const core = await memoryCore('Write a.md.');
  const approvals = new MemoryApprovalStore();
  approvals.policies.set('run-1', ['write_file']);
  const tokens = new RecordingTokens();
  const deps = { ...core.deps, approvals, tokens, clock: () => new Date('2026-01-01T00:00:00.000Z') };
  core.model.addTurn(turn);
  const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, deps);
  const run = { runId: 'run-1', status: 'running' as const };
  return { ...core, approvals, tokens, deps, step, run };
}

describe('the inference step', () => {
  it('marks the calls of gated tools, and only those', async () => {
    const { step } = await gatedCore(use(['toolu_w', 'write_file', input], ['toolu_c', 'calculator', { operation: 'add', a: 1, b: 1 }]));
    expect(step.toolCalls).toEqual([
      { id: 'toolu_w', name: 'write_file', needsApproval: true },
      { id: 'toolu_c', name: 'calculator', needsApproval: false },
    ]);
  });
});

describe('requestApproval', () => {
  it('opens one request however often it runs, and announces the call', async () => {
    const { deps, approvals } = await gatedCore();
    const first = await requestApproval({ step: 'request', ...call }, deps);
    const again = await requestApproval({ step: 'request', ...call }, { ...deps, clock: () => new Date('2026-01-01T01:00:00.000Z') });

    const detail = { runId: 'run-1', toolUseId: 'toolu_w', agent: 'single', name: 'write_file', input, requestedAt: '2026-01-01T00:00:00.000Z' };
    expect(first).toEqual({ decided: false, detail });
    expect(again).toEqual(first);
    expect(await approvals.list('run-1')).toHaveLength(1);
  });

  it('keeps an input longer than the event may carry whole for the reviewer, and announces it cut', async () => {
    const long = { path: 'big.txt', content: 'y'.repeat(50_000) };
    const { deps, approvals } = await gatedCore(use(['toolu_w', 'write_file', long]));
    const outcome = await requestApproval({ step: 'request', ...call }, deps);
    expect((await approvals.get('run-1', 'toolu_w'))?.input).toEqual(long);
    expect(outcome).toMatchObject({ decided: false, detail: { inputTruncated: true } });
    expect(outcome.decided ? '' : String(outcome.detail.input)).toHaveLength(announcedInputChars + 1);
  });

  it('shows an input too long for its record cut, and says so, to the reviewer and in the event', async () => {
    const long = { path: 'big.txt', content: 'x'.repeat(approvalInputChars) };
    const { deps, approvals } = await gatedCore(use(['toolu_w', 'write_file', long]));
    const outcome = await requestApproval({ step: 'request', ...call }, deps);
    const record = await approvals.get('run-1', 'toolu_w');
    expect(record?.inputTruncated).toBe(true);
    expect(String(record?.input)).toHaveLength(approvalInputChars + 1);
    expect(String(record?.input).startsWith('{"path":"big.txt","content":"xxx')).toBe(true);
    expect(outcome).toMatchObject({ decided: false, detail: { inputTruncated: true } });
    const shown = outcome.decided ? '' : String(outcome.detail.input);
    expect(shown).toHaveLength(announcedInputChars + 1);
    expect(shown.startsWith('{"path":"big.txt","content":"xxx')).toBe(true);
  });

  it('needs no wait for a call that is decided or already answered', async () => {
    const { deps, run } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await decideApproval(run, 'toolu_w', { decision: 'approve' }, 'reviewer-1', deps);
    expect(await requestApproval({ step: 'request', ...call }, deps)).toEqual({ decided: true });
  });
});

describe('awaitDecision', () => {
  it('keeps the newest token, and a decision resumes that one', async () => {
    const { deps, approvals, tokens, run } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await awaitDecision({ step: 'await', ...call, token: 'token-1' }, deps);
    // A retried wait gets a fresh token; the first one no longer waits.
    await awaitDecision({ step: 'await', ...call, token: 'token-2' }, deps);
    expect((await approvals.get('run-1', 'toolu_w'))?.token).toBe('token-2');

    await decideApproval(run, 'toolu_w', { decision: 'approve' }, 'reviewer-1', deps);
    expect(tokens.resumed).toEqual([{ token: 'token-2', output: { decision: 'approve' } }]);
  });

  it('refuses to wait on a call decided before the wait began', async () => {
    const { deps, run } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await decideApproval(run, 'toolu_w', { decision: 'deny' }, 'reviewer-1', deps);
    await expect(awaitDecision({ step: 'await', ...call, token: 'token-1' }, deps)).rejects.toBeInstanceOf(ApprovalDecided);
  });

  it('wakes the loop again when a decision is repeated, in case the first wake-up was lost', async () => {
    const { deps, tokens, run } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await awaitDecision({ step: 'await', ...call, token: 'token-1' }, deps);
    await decideApproval(run, 'toolu_w', { decision: 'approve' }, 'reviewer-1', deps);
    await expect(decideApproval(run, 'toolu_w', { decision: 'deny' }, 'reviewer-1', deps)).rejects.toThrow('already decided: approve');
    expect(tokens.resumed.map((r) => r.output)).toEqual([{ decision: 'approve' }, { decision: 'approve' }]);
  });
});

describe('decisions', () => {
  it('records who decided and shows it among the run\'s decisions', async () => {
    const { deps, run, approvals } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    const recorded = await decideApproval(run, 'toolu_w', { decision: 'deny', reason: 'not there' }, 'iss#alice', deps);
    expect(recorded).toEqual({ runId: 'run-1', toolUseId: 'toolu_w', decision: 'deny', reason: 'not there', decidedAt: '2026-01-01T00:00:00.000Z', decidedBy: 'iss#alice' });
    expect(decisionsOf(await approvals.list('run-1'))).toEqual([
      { toolUseId: 'toolu_w', name: 'write_file', decision: 'deny', reason: 'not there', decidedAt: '2026-01-01T00:00:00.000Z', decidedBy: 'iss#alice' },
    ]);
  });
});

describe('the tool step of a gated call', () => {
  it('runs the tool once approved', async () => {
    const { deps, run, workspaces, conversations } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await decideApproval(run, 'toolu_w', { decision: 'approve' }, 'reviewer-1', deps);
    expect(await toolStep({ ...call, needsApproval: true }, deps)).toEqual({ toolUseId: 'toolu_w', isError: false });
    expect(workspaces.get('run-1')?.files.has('a.md')).toBe(true);
    expect((await conversations.loadTurn('run/run-1/single', 1))?.results[0]?.content).toBe('Wrote 1 bytes to a.md.');
  });

  it('runs an approved call with the reviewer\'s edited input, tells the model so, and leaves the model\'s call as it was', async () => {
    const { deps, run, workspaces, conversations, approvals } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    const recorded = await decideApproval(run, 'toolu_w', { decision: 'approve', input: { path: 'b.md', content: 'B!' }, message: 'b.md, not a.md' }, 'rita', deps);
    expect(recorded).toMatchObject({ decision: 'approve', edited: true, message: 'b.md, not a.md', decidedBy: 'rita' });
    expect(await toolStep({ ...call, needsApproval: true }, deps)).toEqual({ toolUseId: 'toolu_w', isError: false });
    const files = workspaces.get('run-1')?.files;
    expect([...(files?.keys() ?? [])]).toEqual(['b.md']);
    expect(new TextDecoder().decode(files?.get('b.md'))).toBe('B!');
    const turn = await conversations.loadTurn('run/run-1/single', 1);
    expect(turn?.results[0]?.content).toBe(
      'A reviewer edited this call\'s input before it ran; it ran with: {"path":"b.md","content":"B!"}\n\nWrote 2 bytes to b.md.\n\nMessage from the reviewer: b.md, not a.md',
    );
    expect(turn?.message.content).toContainEqual({ type: 'tool_use', id: 'toolu_w', name: 'write_file', input });
    expect(decisionsOf(await approvals.list('run-1'))).toEqual([
      { toolUseId: 'toolu_w', name: 'write_file', decision: 'approve', message: 'b.md, not a.md', edited: true, decidedAt: '2026-01-01T00:00:00.000Z', decidedBy: 'rita' },
    ]);
  });

  it('refuses an edited input that does not fit the tool, naming the field, and records nothing', async () => {
    const { deps, run, approvals } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    const refused = decideApproval(run, 'toolu_w', { decision: 'approve', input: { path: 'b.md', content: 7 } }, 'rita', deps);
    await expect(refused).rejects.toBeInstanceOf(InvalidEditedInput);
    await expect(refused).rejects.toMatchObject({ issues: [{ path: 'input.content', message: expect.any(String) }] });
    expect((await approvals.get('run-1', 'toolu_w'))?.decision).toBeUndefined();
  });

  it('gives the model the reviewer\'s message of a denial', async () => {
    const { deps, run, conversations } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await decideApproval(run, 'toolu_w', { decision: 'deny', reason: 'kept for the log', message: 'Write it under notes/ instead.' }, 'rita', deps);
    await toolStep({ ...call, needsApproval: true }, deps);
    expect((await conversations.loadTurn('run/run-1/single', 1))?.results[0]?.content).toMatch(/^A reviewer denied this tool call: Write it under notes\/ instead\.\n/);
  });

  it('answers a denied call with an error result naming the reason, without running it', async () => {
    const { deps, run, workspaces, conversations } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await decideApproval(run, 'toolu_w', { decision: 'deny', reason: 'wrong folder' }, 'reviewer-1', deps);
    expect(await toolStep({ ...call, needsApproval: true }, deps)).toEqual({ toolUseId: 'toolu_w', isError: true });
    expect(workspaces.get('run-1')?.files.size ?? 0).toBe(0);
    const result = (await conversations.loadTurn('run/run-1/single', 1))?.results[0];
    expect(result).toMatchObject({ tool_use_id: 'toolu_w', is_error: true });
    expect(result?.content).toBe(
      'A reviewer denied this tool call: wrong folder\nThe call was not run. Do not repeat it unchanged; choose another way or explain what you need.',
    );
  });

  it('leaves a denied call out of the actions the run took', async () => {
    const { deps, run, model, runs } = await gatedCore(use(['toolu_w', 'write_file', input], ['toolu_c', 'calculator', { operation: 'add', a: 1, b: 1 }]));
    await requestApproval({ step: 'request', ...call }, deps);
    await decideApproval(run, 'toolu_w', { decision: 'deny', reason: 'wrong folder' }, 'reviewer-1', deps);
    await toolStep({ ...call, needsApproval: true }, deps);
    await toolStep({ ...call, toolUseId: 'toolu_c' }, deps);
    model.addTurn(say('1 + 1 = 2; I did not write a.md.'));
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 1 }, deps);

    expect(runs.runs.get('run-1')?.result).toEqual({
      response: '1 + 1 = 2; I did not write a.md.',
      actionsTaken: ['calculator {"operation":"add","a":1,"b":1}'],
    });
  });

  it('denies an undecided call (its wait timed out) with reason timeout, once', async () => {
    const { deps, run, approvals, workspaces } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await toolStep({ ...call, needsApproval: true }, deps);
    await toolStep({ ...call, needsApproval: true }, deps);

    expect(await approvals.get('run-1', 'toolu_w')).toMatchObject({ decision: 'deny', reason: 'timeout', decidedBy: 'timeout' });
    expect(workspaces.get('run-1')?.files.size ?? 0).toBe(0);
    await expect(decideApproval(run, 'toolu_w', { decision: 'approve' }, 'reviewer-1', deps)).rejects.toThrow('already decided: deny (no decision in time)');
  });

  it('applies a decision whose wake-up was lost when the wait times out', async () => {
    const { deps, run, workspaces } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await awaitDecision({ step: 'await', ...call, token: 'token-1' }, deps);
    deps.tokens.gone.add('token-1');
    await decideApproval(run, 'toolu_w', { decision: 'approve' }, 'reviewer-1', deps);
    expect(await toolStep({ ...call, needsApproval: true }, deps)).toEqual({ toolUseId: 'toolu_w', isError: false });
    expect(workspaces.get('run-1')?.files.has('a.md')).toBe(true);
  });

  it('records a timed-out denial at the time of the step’s clock', async () => {
    const { deps, approvals } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    await toolStep({ ...call, needsApproval: true }, { ...deps, clock: () => new Date('2026-01-01T00:10:00.000Z') });
    expect((await approvals.get('run-1', 'toolu_w'))?.decidedAt).toBe('2026-01-01T00:10:00.000Z');
  });

  it('refuses a gated call for which no approval was requested', async () => {
    const { deps } = await gatedCore();
    await expect(toolStep({ ...call, needsApproval: true }, deps)).rejects.toThrow('needs approval, but none was requested');
  });
});

describe('requestApproval of a call that needs no wait', () => {
  it('opens nothing for a call that already has its result', async () => {
    const { deps, approvals } = await gatedCore();
    await deps.conversations.putResult('run/run-1/single', 1, 0, { type: 'tool_result', tool_use_id: 'toolu_w', content: 'done' });
    expect(await requestApproval({ step: 'request', ...call }, deps)).toEqual({ decided: true });
    expect(await approvals.list('run-1')).toEqual([]);
  });

  it('refuses a tool call id that an approval of another turn holds', async () => {
    const { deps, approvals } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    const standing = approvals.approvals.get('run-1/toolu_w') as Approval;
    approvals.approvals.set('run-1/toolu_w', { ...standing, seq: 7 });
    await expect(requestApproval({ step: 'request', ...call }, deps)).rejects.toThrow(
      new StepStateInvalid('Tool call id toolu_w appears twice in run run-1; approvals are kept by tool call id.'),
    );
    approvals.approvals.set('run-1/toolu_w', { ...standing, conversationId: 'session/s1' });
    await expect(requestApproval({ step: 'request', ...call }, deps)).rejects.toBeInstanceOf(StepStateInvalid);
  });

  it('shows an input exactly at the limits whole', async () => {
    const { deps: recordDeps, approvals } = await gatedCore(
      use(['toolu_w', 'write_file', { path: 'a.md', content: 'x'.repeat(approvalInputChars - JSON.stringify({ path: 'a.md', content: '' }).length) }]),
    );
    await requestApproval({ step: 'request', ...call }, recordDeps);
    expect((await approvals.get('run-1', 'toolu_w'))?.inputTruncated).toBeUndefined();
    const content = 'x'.repeat(announcedInputChars - JSON.stringify({ path: 'a.md', content: '' }).length);
    const { deps } = await gatedCore(use(['toolu_w', 'write_file', { path: 'a.md', content }]));
    expect(await requestApproval({ step: 'request', ...call }, deps)).toEqual({
      decided: false,
      detail: { runId: 'run-1', toolUseId: 'toolu_w', agent: 'single', name: 'write_file', input: { path: 'a.md', content }, requestedAt: '2026-01-01T00:00:00.000Z' },
    });
  });
});

describe('awaitDecision of a call without a request', () => {
  it('waits on a requested call, and refuses one that was never requested', async () => {
    const { deps } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    expect(await awaitDecision({ step: 'await', ...call, token: 'token-1' }, deps)).toEqual({ toolUseId: 'toolu_w', waiting: true });
    await expect(awaitDecision({ step: 'await', ...call, toolUseId: 'toolu_x', token: 'token-1' }, deps)).rejects.toThrow(
      new StepStateInvalid('Run run-1 has no approval request for toolu_x.'),
    );
  });
});

describe('decideApproval when the record changes under it', () => {
  it('refuses a request that vanished, and a decision that another reviewer recorded first', async () => {
    const { deps, run, approvals } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    const decide = approvals.decide.bind(approvals);
    approvals.decide = async () => ({ recorded: false, approval: undefined });
    await expect(decideApproval(run, 'toolu_w', { decision: 'approve' }, 'iss#alice', deps)).rejects.toThrow(
      new ApprovalNotFound('Run run-1 has no approval request for tool call toolu_w.'),
    );
    approvals.decide = async (runId, toolUseId) => {
      await decide(runId, toolUseId, { decision: 'deny', reason: 'not now', decidedAt: '2026-01-01T00:00:01.000Z', decidedBy: 'iss#bob' });
      return decide(runId, toolUseId, { decision: 'approve', decidedAt: '2026-01-01T00:00:02.000Z', decidedBy: 'iss#alice' });
    };
    await expect(decideApproval(run, 'toolu_w', { decision: 'approve' }, 'iss#alice', deps)).rejects.toThrow(
      new ApprovalAlreadyDecided('Tool call toolu_w of run run-1 was already decided: deny (not now) at 2026-01-01T00:00:01.000Z.'),
    );
  });
});

describe('settleApproval', () => {
  it('keeps a recorded decision, and denies an undecided call as timed out', async () => {
    const { deps } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    const timedOut = await settleApproval('run-1', 'toolu_w', deps);
    expect(timedOut).toEqual({
      runId: 'run-1', toolUseId: 'toolu_w', agent: 'single', conversationId: 'run/run-1/single', seq: 1, name: 'write_file', input,
      requestedAt: '2026-01-01T00:00:00.000Z', decision: 'deny', reason: 'timeout', decidedAt: '2026-01-01T00:00:00.000Z', decidedBy: 'timeout',
    });
    expect(await settleApproval('run-1', 'toolu_w', { ...deps, clock: () => new Date('2026-01-02T00:00:00.000Z') })).toEqual(timedOut);
  });

  it('refuses a call whose record cannot be settled', async () => {
    const { deps, approvals } = await gatedCore();
    await requestApproval({ step: 'request', ...call }, deps);
    approvals.decide = async () => ({ recorded: false, approval: undefined });
    await expect(settleApproval('run-1', 'toolu_w', deps)).rejects.toThrow(
      new StepStateInvalid('The approval of toolu_w in run run-1 could not be settled.'),
    );
  });
});

describe('denialMessage', () => {
  it('tells the model why the call was denied: timeout, the reviewer’s reason, or no reason', () => {
    const tail = '\nThe call was not run. Do not repeat it unchanged; choose another way or explain what you need.';
    expect([
      denialMessage({ decidedBy: 'timeout', reason: 'timeout' }),
      denialMessage({ decidedBy: 'iss#alice', reason: 'wrong folder' }),
      denialMessage({ decidedBy: 'iss#alice' }),
    ]).toEqual([
      `A reviewer denied this tool call: timeout (no reviewer decided in time).${tail}`,
      `A reviewer denied this tool call: wrong folder${tail}`,
      `A reviewer denied this tool call.${tail}`,
    ]);
  });
});

describe('decisionsOf and waitingFor', () => {
  const base = { runId: 'run-1', agent: 'single' as const, conversationId: 'c', seq: 1, name: 'write_file', input: {} };
  const approvals: Approval[] = [
    { ...base, toolUseId: 'b', requestedAt: '2026-01-01T00:00:02.000Z', decision: 'approve', decidedAt: '2026-01-01T00:01:00.000Z', decidedBy: 'iss#alice' },
    { ...base, toolUseId: 'w2', requestedAt: '2026-01-01T00:00:05.000Z', input: '{"path":…', inputTruncated: true },
    { ...base, toolUseId: 'a', requestedAt: '2026-01-01T00:00:03.000Z', decision: 'deny', reason: 'no', decidedAt: '2026-01-01T00:00:30.000Z' },
    { ...base, toolUseId: 'w1', requestedAt: '2026-01-01T00:00:04.000Z' },
    { ...base, toolUseId: 'c', requestedAt: '2026-01-01T00:00:01.000Z', decision: 'deny', decidedAt: '2026-01-01T00:01:00.000Z', decidedBy: 'timeout' },
    { ...base, toolUseId: 'w0', requestedAt: '2026-01-01T00:00:04.000Z' },
  ];

  it('lists the decided calls in the order they were decided, naming a reviewer for records made before reviewers were named', () => {
    expect(decisionsOf(approvals)).toEqual([
      { toolUseId: 'a', name: 'write_file', decision: 'deny', reason: 'no', decidedAt: '2026-01-01T00:00:30.000Z', decidedBy: 'reviewer' },
      { toolUseId: 'b', name: 'write_file', decision: 'approve', decidedAt: '2026-01-01T00:01:00.000Z', decidedBy: 'iss#alice' },
      { toolUseId: 'c', name: 'write_file', decision: 'deny', decidedAt: '2026-01-01T00:01:00.000Z', decidedBy: 'timeout' },
    ]);
  });

  it('lists the undecided calls oldest first, keeping the order of calls requested at the same moment', () => {
    expect(waitingFor(approvals)).toEqual([
      { toolUseId: 'w1', name: 'write_file', input: {}, requestedAt: '2026-01-01T00:00:04.000Z' },
      { toolUseId: 'w0', name: 'write_file', input: {}, requestedAt: '2026-01-01T00:00:04.000Z' },
      { toolUseId: 'w2', name: 'write_file', input: '{"path":…', inputTruncated: true, requestedAt: '2026-01-01T00:00:05.000Z' },
    ]);
  });
});

describe('approval rules', () => {
  const tool = fc.constantFrom('write_file', 'edit_file', 'calculator');
  const rule = fc.record(
    { tool, input: fc.dictionary(fc.constantFrom('path', 'content'), fc.constantFrom('notes/**', '*.md', '**', 'src/*.ts', 'a?.md'), { maxKeys: 2 }), action: fc.constantFrom('approve', 'deny', 'ask') },
    { requiredKeys: ['tool', 'action'] },
  ) as fc.Arbitrary<ApprovalRule>;
  const aCall = fc.record({ name: tool, input: fc.record({ path: fc.constantFrom('notes/a.md', 'notes/x/y.md', 'a.md', 'ab.md', 'src/x.ts', 'src/x/y.ts', '.env') }, { requiredKeys: [] }) });
  const policy = fc.record({ tools: fc.subarray(['write_file', 'edit_file', 'calculator']), rules: fc.array(rule, { maxLength: 6 }) });
  const matches = (r: ApprovalRule, c: { name: string; input: unknown }) => ruleFor({ tools: [], rules: [r] }, c).index === 0;

  it('decides every call exactly once: the first rule that matches, else ask for a gated tool and approve for another', () => {
    fc.assert(
      fc.property(policy, aCall, (p, c) => {
        const got = ruleFor(p, c);
        expect(['approve', 'deny', 'ask']).toContain(got.action);
        const first = p.rules.findIndex((r) => matches(r, c));
        if (first >= 0) expect(got).toEqual({ action: p.rules[first]?.action, index: first });
        else expect(got).toEqual({ action: p.tools.includes(c.name) ? 'ask' : 'approve' });
      }),
      { numRuns: 500 },
    );
  });

  it('is unchanged by rules added after the one that matched, or before it when they do not match', () => {
    fc.assert(
      fc.property(policy, aCall, fc.array(rule, { maxLength: 3 }), (p, c, more) => {
        const got = ruleFor(p, c);
        if (got.index === undefined) return;
        expect(ruleFor({ ...p, rules: [...p.rules, ...more] }, c)).toEqual(got);
        const misses = more.filter((r) => !matches(r, c));
        expect(ruleFor({ ...p, rules: [...misses, ...p.rules] }, c)).toEqual({ action: got.action, index: got.index + misses.length });
      }),
    );
  });

  it.each([
    ['notes/**', 'notes/a.md', true],
    ['notes/**', 'notes/x/y.md', true],
    ['notes/**', 'a.md', false],
    ['notes/**', 'notesx/a.md', false],
    ['*.md', 'a.md', true],
    ['*.md', 'notes/a.md', false],
    ['a?.md', 'ab.md', true],
    ['**', '.env', true],
  ])('matches %s against %s: %s', (glob, path, expected) => {
    expect(matches({ tool: 'write_file', input: { path: glob }, action: 'approve' }, { name: 'write_file', input: { path } })).toBe(expected);
  });

  it('matches nothing against a field the call lacks, or a field that is not text', () => {
    const r: ApprovalRule = { tool: 'calculator', input: { a: '**' }, action: 'deny' };
    expect(matches(r, { name: 'calculator', input: { operation: 'add', b: 1 } })).toBe(false);
    expect(matches(r, { name: 'calculator', input: { operation: 'add', a: 1, b: 1 } })).toBe(false);
  });

  it('decides a call a rule approves or denies at once, recorded as that rule\'s, and leaves an asked one waiting', async () => {
    const { deps, approvals } = await gatedCore(
      use(['toolu_w', 'write_file', { path: 'notes/a.md', content: 'A' }], ['toolu_x', 'write_file', { path: 'b.md', content: 'B' }]),
    );
    approvals.rules.set('run-1', [
      { tool: 'write_file', input: { path: 'notes/**' }, action: 'approve' },
      { tool: 'write_file', input: { path: 'secret/**' }, action: 'deny' },
    ]);
    expect(await requestApproval({ step: 'request', ...call }, deps)).toEqual({ decided: true });
    expect(await approvals.get('run-1', 'toolu_w')).toMatchObject({ decision: 'approve', decidedBy: 'rule:0' });
    expect(await requestApproval({ step: 'request', ...call, toolUseId: 'toolu_x' }, deps)).toMatchObject({ decided: false });
    expect((await approvals.get('run-1', 'toolu_x'))?.decision).toBeUndefined();
  });
});
