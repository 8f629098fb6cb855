import { describe, expect, it } from 'vitest';
import type { Approval } from '../../functions/core/approvals/types.js';
import { newRun } from '../support/memory.js';
import { useLocalAws } from '../support/local-aws.js';

const aws = useLocalAws();
let counter = 0;
const freshRun = () => `appr-${Date.now()}-${counter++}`;

function request(runId: string, toolUseId: string, extra: Partial<Approval> = {}): Approval {
  return {
    runId,
    toolUseId,
    agent: 'single',
    conversationId: `run/${runId}/single`,
    seq: 1,
    name: 'write_file',
    input: { path: 'a.md', content: 'A' },
    requestedAt: '2026-01-01T00:00:00.000Z',
    ...extra,
  };
}

const decision = (d: 'approve' | 'deny', reason?: string) => ({
  decision: d,
  decidedAt: '2026-01-01T00:01:00.000Z',
  decidedBy: 'reviewer' as const,
  ...(reason ? { reason } : {}),
});

describe('DynamoApprovalStore', () => {
  it('opens a request once; a second open returns the first', async () => {
    const { approvals } = aws.wiring();
    const runId = freshRun();
    expect(await approvals.open(request(runId, 'toolu_1'))).toEqual(request(runId, 'toolu_1'));
    expect(await approvals.open(request(runId, 'toolu_1', { requestedAt: '2026-02-02T00:00:00.000Z' }))).toEqual(request(runId, 'toolu_1'));
    expect(await approvals.get(runId, 'toolu_1')).toEqual(request(runId, 'toolu_1'));
  });

  it('keeps the newest token while undecided, and none once decided', async () => {
    const { approvals } = aws.wiring();
    const runId = freshRun();
    expect(await approvals.attachToken(runId, 'toolu_1', 'token-0')).toBe('missing');
    await approvals.open(request(runId, 'toolu_1'));
    expect(await approvals.attachToken(runId, 'toolu_1', 'token-1')).toBe('attached');
    expect(await approvals.attachToken(runId, 'toolu_1', 'token-2')).toBe('attached');
    expect((await approvals.get(runId, 'toolu_1'))?.token).toBe('token-2');

    expect(await approvals.decide(runId, 'toolu_1', decision('deny', 'no'))).toEqual({
      recorded: true,
      approval: { ...request(runId, 'toolu_1'), token: 'token-2', ...decision('deny', 'no') },
    });
    expect(await approvals.attachToken(runId, 'toolu_1', 'token-3')).toBe('decided');
    expect((await approvals.get(runId, 'toolu_1'))?.token).toBe('token-2');
  });

  it('records one decision when several race, and reports the one that stands', async () => {
    const { approvals } = aws.wiring();
    const runId = freshRun();
    await approvals.open(request(runId, 'toolu_1'));
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) => approvals.decide(runId, 'toolu_1', decision(i % 2 ? 'approve' : 'deny', `reviewer ${i}`))),
    );
    expect(outcomes.filter((o) => o.recorded)).toHaveLength(1);
    const standing = outcomes.find((o) => o.recorded)?.approval;
    for (const o of outcomes) expect(o.approval).toEqual(standing);
    expect(await approvals.decide(freshRun(), 'toolu_1', decision('approve'))).toEqual({ recorded: false, approval: undefined });
  });

  it('lists a run’s approvals, not its record or another run’s', async () => {
    const { approvals, runs } = aws.wiring();
    const runId = freshRun();
    await runs.create(newRun(runId, 'Gate writes.', { approvals: { tools: ['write_file', 'edit_file'] } }));
    for (const id of ['toolu_a', 'toolu_b', 'toolu_c']) await approvals.open(request(runId, id));
    await approvals.open(request(freshRun(), 'toolu_z'));
    expect((await approvals.list(runId)).map((a) => a.toolUseId)).toEqual(['toolu_a', 'toolu_b', 'toolu_c']);
    expect(await runs.get(runId)).toMatchObject({ runId, approvals: { tools: ['write_file', 'edit_file'] } });
  });

  it('reads the tools a run gates from its record', async () => {
    const { approvals, runs } = aws.wiring();
    const gated = freshRun();
    const open = freshRun();
    await runs.create(newRun(gated, 'Gate writes.', { approvals: { tools: ['write_file'] } }));
    await runs.create(newRun(open, 'Gate nothing.'));
    expect(await approvals.toolsFor(gated)).toEqual(['write_file']);
    expect(await approvals.toolsFor(gated)).toEqual(['write_file']);
    expect(await approvals.toolsFor(open)).toEqual([]);
  });

  it('reads a run\'s policy with its layers, and a record made before layers as it was written', async () => {
    const { approvals, runs } = aws.wiring();
    const layered = freshRun();
    const legacy = freshRun();
    const policy = {
      tools: ['write_file', 'docs__*'],
      rules: [{ tool: 'write_file', action: 'approve' as const }],
      layers: [
        { from: 'deployment', tools: ['docs__*'] },
        { from: 'run', tools: ['write_file'], rules: [{ tool: 'write_file', action: 'approve' as const }] },
      ],
    };
    await runs.create(newRun(layered, 'Gate.', { approvals: policy }));
    await runs.create(newRun(legacy, 'Gate.', { approvals: { tools: ['edit_file'], rules: [{ tool: 'edit_file', action: 'approve' }] } }));
    expect(await approvals.policyFor(layered)).toEqual(policy);
    expect(await approvals.toolsFor(layered)).toEqual(['docs__*', 'write_file']);
    expect(await approvals.policyFor(legacy)).toEqual({ tools: ['edit_file'], rules: [{ tool: 'edit_file', action: 'approve' }] });
  });
});
