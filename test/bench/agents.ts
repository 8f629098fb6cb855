/**
 * Run on its own (`tsx test/bench/agents.ts`, as `npm run bench` does): what a call of an agent
 * costs the loop that makes it, in state transitions: one turn calling a
 * built-in tool against one turn calling an agent, each then answering, on the local stack. The
 * parent's own executions are counted apart from the child's loop (its own iterations).
 */
import type { AgentDefinition } from '../../functions/core/definitions/types.js';
import { say, use } from '../support/agents.js';
import { startFixture } from '../support/local-stack.js';
import { row } from './table.js';

const helper: AgentDefinition = { name: 'bench-helper', description: 'Answers at once.', instructions: 'Answer at once.', tools: [] };
const lead: AgentDefinition = { name: 'bench-lead', description: 'Calls a tool or an agent.', instructions: 'Call what you are asked to.', tools: ['read_file', 'agent:bench-helper'] };

export interface ChildOverhead {
  toolCall: number;
  agentCall: number;
  child: number;
}

export async function measureChildOverhead(): Promise<ChildOverhead> {
  const fixture = await startFixture({ STEPWISE_AGENTS: JSON.stringify([helper, lead]) });
  try {
    const transitions = async (runId: string, prefix: string) =>
      fixture.stack.runtime
        .list()
        .filter((e) => e.executionArn.split(':').at(-1)?.startsWith(prefix))
        .reduce((n, e) => n + e.transitions, 0);
    const run = async (tag: string, turns: Parameters<typeof fixture.book.add>[1][]) => {
      const goal = `${fixture.book.add(tag, ...turns)} bench`;
      const started = await fixture.post('/runs', { goal, agent: lead.name });
      return (await fixture.waitFor(String(started.body.runId))).runId;
    };
    // Warm both paths once, then measure.
    for (let i = 0; i < 2; i++) {
      const toolRun = await run(`tool-${i}`, [{ turn: use(['toolu_r', 'read_file', { path: 'missing.txt' }]) }, { turn: say('done') }]);
      const childGoal = `${fixture.book.add(`child-${i}`, { turn: say('ok') })} help`;
      const agentRun = await run(`agent-${i}`, [{ turn: use(['toolu_a', 'agent_bench_helper', { goal: childGoal }]) }, { turn: say('done') }]);
      if (i === 0) continue;
      const parent = await fixture.get(`/runs/${agentRun}`);
      const childId = Object.values((parent.body.children ?? {}) as Record<string, { runId: string }>)[0]?.runId ?? '';
      return { toolCall: await transitions(toolRun, `${toolRun}-`), agentCall: await transitions(agentRun, `${agentRun}-`), child: await transitions(childId, `${childId}-`) };
    }
    throw new Error('unreachable');
  } finally {
    await fixture.close();
  }
}

export function childReport(figures: ChildOverhead): string {
  return [
    '\n## A call of an agent against a call of a tool (one call, then the answer; state transitions of the calling run)\n',
    row(['turn', 'transitions of the calling run', 'over the tool call', 'the child’s own loop']),
    row(['---', '---', '---', '---']),
    row(['calls read_file', figures.toolCall, '', '']),
    row(['calls an agent', figures.agentCall, `+${figures.agentCall - figures.toolCall}`, figures.child]),
    '',
    `A child run's start adds ${figures.agentCall - figures.toolCall} state transitions over a tool call (target: ≤ 2).`,
  ].join('\n');
}

console.log(childReport(await measureChildOverhead()));
