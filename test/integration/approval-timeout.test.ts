import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import type { RunView } from '../../functions/api/schemas.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

// A deployment whose reviewers get two seconds (24 hours by default).
const local = useLocalStack({}, { stackProps: { approvalTimeout: Duration.seconds(2) } });

describe('an approval nobody decides', () => {
  it('is denied with reason timeout when the wait runs out, and a late decision is refused', async () => {
    const tag = local.book.add(
      'timeout',
      { turn: use(['toolu_late', 'write_file', { path: 'late.md', content: 'too late' }]) },
      // The model takes a while, so the late reviewer finds the run still running.
      { turn: say('Nobody approved; I left it.'), delayMs: 1_500 },
    );
    const started = await local.post('/runs', { goal: `${tag} Write late.md.`, mode: 'single', approvals: { tools: ['write_file'] } });
    const runId = String(started.body.runId);

    const seen: RunView[] = [];
    for (let i = 0; i < 500; i++) {
      const run = (await local.get(`/runs/${runId}`)).body as unknown as RunView;
      seen.push(run);
      // Waited, then no longer: the timeout has denied the call and the model is being asked.
      if (seen.some((r) => r.waitingFor.length === 1) && run.waitingFor.length === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const late = await local.post(`/runs/${runId}/approvals/toolu_late`, { decision: 'approve' });
    expect(late).toMatchObject({
      status: 409,
      body: { error: { code: 'ApprovalAlreadyDecided', message: expect.stringContaining('already decided: deny (no decision in time)') } },
    });

    const run = await local.waitFor(runId);
    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'Nobody approved; I left it.' } });
    expect((await local.get(`/runs/${runId}/files`)).body.items).toEqual([]);
    const [result] = local.book.requests.get('timeout')?.[1]?.messages.at(-1)?.content as { tool_use_id: string; content: string; is_error?: boolean }[];
    expect(result).toMatchObject({ tool_use_id: 'toolu_late', is_error: true });
    expect(result?.content).toMatch(/^A reviewer denied this tool call: timeout/);
    // The wait's token is gone with it.
    expect(local.stack.runtime.waitingTokens()).toEqual([]);
  });
});
