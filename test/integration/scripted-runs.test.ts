import { describe, expect, it } from 'vitest';
import type { Run } from '../../functions/core/runs/types.js';
import { useLocalStack } from '../support/local-stack.js';

// The scripted provider, as docs/getting-started.md shows it: every run replays local/scripts/calculator.json.
const local = useLocalStack({ STEPWISE_PROVIDER: 'scripted', STEPWISE_SCRIPT: 'local/scripts/calculator.json' });
const goal = 'What is 1234 times 5678? Save the answer to answer.md.';

const answered = {
  status: 'succeeded',
  phase: 'complete',
  iterations: { single: 3 },
  result: {
    response: '1234 × 5678 = 7,006,652. I saved it to answer.md.',
    actionsTaken: [
      'calculator {"operation":"multiply","a":1234,"b":5678}',
      'write_file {"path":"answer.md","content":"# Answer\\n\\n1234 × 5678 = 7006652\\n"}',
    ],
  },
};

async function start(extra: Record<string, unknown> = {}): Promise<string> {
  const res = await local.post('/runs', { goal, mode: 'single', ...extra });
  expect(res.status).toBe(202);
  return String(res.body.runId);
}

describe('STEPWISE_SCRIPT on the local stack', () => {
  it('replays the script for each run, one after another and side by side', async () => {
    expect(await local.run(goal)).toMatchObject(answered);
    expect(await local.run(goal)).toMatchObject(answered);

    const together = await Promise.all([start(), start(), start()]);
    const runs: Run[] = await Promise.all(together.map((runId) => local.waitFor(runId)));
    expect(runs).toMatchObject([answered, answered, answered]);
    for (const runId of together) {
      expect((await local.get(`/runs/${runId}/files`)).body).toEqual({ items: [{ path: 'answer.md', size: 33 }] });
    }
  });

  it('replays it from the first turn for a later run of a session', async () => {
    expect(await local.run(goal, { sessionId: 'scripted-chat' })).toMatchObject(answered);
    const second = await local.run(goal, { sessionId: 'scripted-chat' });
    expect(second).toMatchObject(answered);
    // Its turns follow the first run's six messages in the session's conversation.
    const messages = (await local.get(`/runs/${second.runId}/messages`)).body.items as { seq: number }[];
    expect(messages.map((m) => m.seq)).toEqual([6, 7, 8, 9, 10, 11]);
  });
});
