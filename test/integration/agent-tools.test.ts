/**
 * Agents that call agents through the local stack (docs/agents.md, "Agents as tools"): a call
 * starts a child run as a nested execution of the agent loop, the tool's result is the child's
 * answer, the child's spend is added to its parent's, and cancelling the parent cancels the child.
 */
import { describe, expect, it } from 'vitest';
import { childRunIdOf } from '../../functions/core/children/children.js';
import type { AgentDefinition } from '../../functions/core/definitions/types.js';
import type { Run } from '../../functions/core/runs/types.js';
import { marked, say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';
import { wire } from '../../functions/wiring/wire.js';

const helper: AgentDefinition = {
  name: 'helper',
  description: 'Does arithmetic for other agents.',
  instructions: 'You do arithmetic with the calculator and answer with the number.',
  tools: ['calculator'],
};

const lead: AgentDefinition = {
  name: 'lead',
  description: 'Delegates arithmetic to the helper.',
  instructions: 'You delegate every sum to the helper agent.',
  tools: ['agent:helper'],
  budget: { maxUsd: 5 },
};

// A priced model and a daily limit, so each run's cost is counted in its owner's daily spend.
const local = useLocalStack({ STEPWISE_AGENTS: JSON.stringify([helper, lead]), STEPWISE_MODEL: 'claude-sonnet-4-5', STEPWISE_DAILY_MAX_USD: '100' });

const get = async (runId: string) => (await local.get(`/runs/${runId}`)).body as unknown as Run;

describe('agents as tools', () => {
  it('starts a child run for a call of an agent, answers with its result and adds its spend to the parent’s', async () => {
    const child = local.book.add('child', { turn: use(['toolu_add', 'calculator', { operation: 'add', a: 2, b: 3 }]) }, { turn: say('5') });
    const parent = local.book.add('parent', { turn: use(['toolu_call', 'agent_helper', { goal: `${child} What is 2 + 3?` }]) }, { turn: say('The helper says 5.') });
    const started = await local.post('/runs', { goal: `${parent} Ask the helper for 2 + 3.`, agent: 'lead' });
    const run = await local.waitFor(String(started.body.runId));

    const childId = childRunIdOf(run.runId, 'toolu_call');
    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'The helper says 5.' }, children: { toolu_call: { runId: childId, agent: 'helper' } } });
    const requests = local.book.requests.get('parent') ?? [];
    expect(requests[0]?.tools).toEqual([expect.objectContaining({ name: 'agent_helper', description: expect.stringContaining('Does arithmetic for other agents.') })]);
    // The call's result is the child's answer, marked as untrusted data (it may carry what the child read).
    expect(requests[1]?.messages.at(-1)?.content).toEqual([expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_call', content: marked('agent_helper', '5') })]);

    const childRun = await get(childId);
    expect(childRun).toMatchObject({ status: 'succeeded', parentRunId: run.runId, depth: 1, agent: { name: 'helper' }, result: { response: '5' }, iterations: { helper: 2 } });
    // The child's owner is the parent's, and its budget is what the parent had left.
    expect(childRun.owner).toEqual(run.owner);
    expect(childRun.budget?.maxUsd).toBeLessThanOrEqual(5);
    // The parent's totals hold the child's tokens besides its own two model calls.
    const ownInput = requests.length;
    expect(run.usage.inputTokens).toBeGreaterThanOrEqual(childRun.usage.inputTokens + ownInput);
    expect(run.usage.inputTokens).toBe((run.usageByAgent?.lead?.inputTokens ?? 0) + childRun.usage.inputTokens);

    // The parent's cost holds the child's, which the owner's daily spend counts once.
    const childCost = childRun.estimatedCostUsd ?? 0;
    expect(childCost).toBeGreaterThan(0);
    expect(run).toMatchObject({ childCostUsd: childCost });
    const { spend } = wire(process.env);
    const spent = await spend.spentOn(run.owner!, run.createdAt.slice(0, 10));
    expect(spent).toBeCloseTo(run.estimatedCostUsd ?? 0, 9);
  });

  it('cancels the child with its parent', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const child = local.book.respondWith('slow-child', async () => {
      await held;
      return { turn: say('too late') };
    });
    const parent = local.book.add('cancelled-parent', { turn: use(['toolu_slow', 'agent_helper', { goal: `${child} Count slowly.` }]) });
    const started = await local.post('/runs', { goal: `${parent} Delegate.`, agent: 'lead' });
    const runId = String(started.body.runId);
    const childId = childRunIdOf(runId, 'toolu_slow');
    for (let i = 0; i < 200 && (await local.get(`/runs/${childId}`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 25));

    expect((await local.post(`/runs/${runId}/cancel`, {})).status).toBe(202);
    release();
    expect(await local.waitFor(runId)).toMatchObject({ status: 'cancelled' });
    expect(await get(childId)).toMatchObject({ status: 'cancelled', parentRunId: runId });
  });
});
