/** Nothing stuck: a run that outlives the orchestrator's timeout ends failed, and its session is free. */
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { say } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack({}, { stackProps: { runTimeout: Duration.seconds(1) } });

describe('a run that outlives the orchestrator\'s timeout', () => {
  it('ends failed with ExecutionTimedOut, naming the agent, and its session takes the next run', async () => {
    const session = `slow-${Date.now()}`;
    const tag = local.book.add('slow', { turn: say('much too late'), delayMs: 2_500 }, { turn: say('quick') });
    const started = await local.post('/runs', { goal: `${tag} Take forever.`, mode: 'single', sessionId: session });
    const runId = String(started.body.runId);

    const run = await local.waitFor(runId, 10_000);

    expect(run).toMatchObject({ status: 'failed', phase: 'failed', error: { code: 'ExecutionTimedOut', agent: 'single' } });
    expect(local.stack.runtime.list().find((e) => e.name === runId)?.status).toBe('TIMED_OUT');
    expect((await local.post('/runs', { goal: `${tag} Next.`, mode: 'single', sessionId: session })).status).toBe(202);
  });
});
