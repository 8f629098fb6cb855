import { describe, expect, it } from 'vitest';
import {
  ApprovalDecided,
  approvalInputChars,
  awaitDecision,
  decideApproval,
  decisionsOf,
  requestApproval,
} from '../../functions/core/approvals.js';
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

  it('shows a long input cut, and says so', async () => {
    const long = { path: 'big.txt', content: 'x'.repeat(approvalInputChars) };
    const { deps } = await gatedCore(use(['toolu_w', 'write_file', long]));
    const outcome = await requestApproval({ step: 'request', ...call }, deps);
    expect(outcome).toMatchObject({ decided: false, detail: { inputTruncated: true } });
    const shown = outcome.decided ? '' : String(outcome.detail.input);
    expect(shown).toHaveLength(approvalInputChars + 1);
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

  it('refuses a gated call for which no approval was requested', async () => {
    const { deps } = await gatedCore();
    await expect(toolStep({ ...call, needsApproval: true }, deps)).rejects.toThrow('needs approval, but none was requested');
  });
});
