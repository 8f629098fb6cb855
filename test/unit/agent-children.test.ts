/**
 * Agents that call agents (DESIGN §12, "Agent as tool") on the in-memory fakes: the child run a
 * call starts, its failure, the tool step that answers with its outcome and rolls its spend up,
 * cancelling down the tree, the inference step starting the children of the calls (or answering
 * those that may start none), the stream's child events, and a workflow's later steps starting
 * from the answers before them.
 */
import { type AGUIEvent, EventType } from '@ag-ui/core';
import { describe, expect, it } from 'vitest';
import type { ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { openingMessage, profileFor } from '../../functions/core/agents/profiles.js';
import { childFailed, childRunIdOf, maxAgentDepth, startChild } from '../../functions/core/children/children.js';
import { AgentCatalog } from '../../functions/core/definitions/catalog.js';
import { builtinAgents, refOf } from '../../functions/core/definitions/definition.js';
import type { AgentDefinition } from '../../functions/core/definitions/types.js';
import { NotFound } from '../../functions/core/errors/errors.js';
import { cancelRun, createRun } from '../../functions/core/intake/create.js';
import { createRunBody } from '../../functions/core/intake/request.js';
import type { ContentBlock, ToolUseBlock } from '../../functions/core/model/messages.js';
import { finalAnswerTool } from '../../functions/core/output/types.js';
import { handsOver, type Run } from '../../functions/core/runs/types.js';
import { inferenceFeatures } from '../../functions/core/steps/features.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import type { ChildStart, ToolInput } from '../../functions/core/steps/types.js';
import { BudgetExceeded } from '../../functions/core/budgets/types.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { agentSpanId, chatSpanId, toolSpanId } from '../../functions/core/traces/context.js';
import type { SpanRecord } from '../../functions/core/traces/types.js';
import { traceEndedRun } from '../../functions/core/traces/run-ended.js';
import { RecordingStarter } from '../support/api.js';
import { MemoryAgentDefinitionStore, newRun } from '../support/memory.js';
import { marked, memoryCore, say, use } from '../support/agents.js';
import { RunEventReader } from '../../functions/core/stream/reader.js';
import { World, messageKey, readAll, resultKey } from '../support/stream-world.js';

const caller = { principal: 'iss#alice', scopes: [] };
const owner = { principal: 'iss#alice' };
const now = '2026-01-01T00:00:00.000Z';
const clock = () => new Date(now);
const zero = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
const tokens = (inputTokens: number, outputTokens: number) => ({ ...zero, inputTokens, outputTokens });
/** What claude-sonnet-4-5 costs (USD per million: 3 in, 15 out). */
const sonnet = (inputTokens: number, outputTokens: number) => (inputTokens * 3 + outputTokens * 15) / 1e6;

function agent(name: string, extra: Partial<AgentDefinition> = {}): AgentDefinition {
  return { name, description: `The ${name}.`, instructions: `You are the ${name}.`, tools: [], ...extra };
}

const verdictSchema = { type: 'object', properties: { verdict: { type: 'string' } }, required: ['verdict'] };
const checker = agent('checker', {
  description: 'Checks a sum.',
  tools: ['calculator', 'read_file'],
  output: { schema: verdictSchema },
  approvals: { tools: ['calculator'], rules: [{ tool: 'read_file', input: { path: 'secret/**' }, action: 'deny' }] },
});
const helper = agent('helper', { description: 'Adds numbers.', tools: ['calculator', 'agent:checker'], maxIterations: 7, budget: { maxUsd: 1 } });
const lead = agent('lead', { description: 'Delegates sums.', tools: ['agent:helper', 'calculator'], budget: { maxUsd: 2, maxTokens: 100_000 } });
/** A chain of agents one deeper than agents may call: deep-a → deep-b → … → deep-e. */
const chain = ['a', 'b', 'c', 'd', 'e'].map((letter, i, all) => agent(`deep-${letter}`, { tools: all[i + 1] ? [`agent:deep-${all[i + 1]}`] : [] }));
const catalog = AgentCatalog.from({ agents: [checker, helper, lead, ...chain] });

/** A turn of tool calls, reporting 1,000 tokens in and 100 out. */
const calls = (...uses: [id: string, name: string, input: unknown][]): ScriptedTurn => ({ ...use(...uses), usage: tokens(1_000, 100) });
/** An answer, reporting 2,000 tokens in and 50 out. */
const answers = (text: string): ScriptedTurn => ({ ...say(text), usage: tokens(2_000, 50) });

/**
 * The steps on in-memory fakes with a run "parent" of `root` made through intake (the
 * deployment gating write_file); `step` makes the next model call of an agent of any run (which
 * starts the children of its calls of agents), `call` names one of its calls, `start` asks
 * startChild for a call directly, and `resultOf` reads a call's stored result.
 */
async function world(root = 'lead', body: Record<string, unknown> = {}) {
  const core = await memoryCore();
  core.deps.settings = { model: 'claude-sonnet-4-5', maxTokens: 1024 };
  const agentStore = new MemoryAgentDefinitionStore();
  const deps = { ...core.deps, agentStore, clock };
  const starter = new RecordingStarter();
  const intakeDeps = { runs: core.runs, starter, newId: () => 'parent', clock, agents: catalog, agentStore, approvalTools: ['write_file'] };
  await createRun(createRunBody(intakeDeps).parse({ goal: 'Add 2 and 3, then check.', agent: root, ...body }), intakeDeps, { caller });
  const childDeps = { runs: core.runs, agentStore, clock };
  const iterations = new Map<string, number>();
  const step = async (runId: string, place: string, turn: ScriptedTurn, stepDeps: typeof deps = deps) => {
    const iteration = iterations.get(runId) ?? 0;
    iterations.set(runId, iteration + 1);
    core.model.addTurn(turn);
    return inferenceStep({ runId, agent: place, iteration }, stepDeps);
  };
  const call = (runId: string, place: string, seq: number, toolUseId: string): ToolInput => ({ runId, agent: place, seq, toolUseId });
  const start = (runId: string, id: string, name: string, input: unknown) => startChild(runId, toolUse(id, name, input), childDeps);
  const record = (runId: string) => core.runs.runs.get(runId);
  /** The stored result of a call, and whether it ran. */
  const stored = async (input: ToolInput) => (await core.conversations.loadTurn(conversationIdOf(input.runId, input.agent), input.seq))?.results.find((r) => r?.tool_use_id === input.toolUseId);
  const resultOf = stored;
  return { ...core, deps, agentStore, starter, childDeps, step, call, start, record, resultOf };
}

function toolUse(id: string, name: string, input: unknown): ToolUseBlock {
  return { type: 'tool_use', id, name, input };
}

/** The child the loop starts for the call of the helper as toolu_1 of run "parent" (the lead's first call). */
function helperChild(maxIterations = 7): ChildStart {
  const runId = childRunIdOf('parent', 'toolu_1');
  return { name: `${runId}-helper`, runId, agent: 'helper', label: 'helper', conversationId: `run/${runId}/helper`, maxIterations, model: '' };
}

/** The parent "lead" called the helper with `input` as toolu_1: the step's result (`turn`), the call, and the child's id. */
async function leadCalls(input: unknown = { goal: 'Add 2 and 3.' }, root?: Awaited<ReturnType<typeof world>>) {
  const w = root ?? (await world());
  const turn = await w.step('parent', 'lead', calls(['toolu_1', 'agent_helper', input]));
  return { ...w, turn, input: w.call('parent', 'lead', turn.seq, 'toolu_1'), childId: childRunIdOf('parent', 'toolu_1') };
}

describe('a run of an agent that calls agents', () => {
  it('records every agent it may reach through calls once, as callees at today\'s versions, and stores them', async () => {
    const w = await world('deep-a');
    const [a, b, c, d, e] = chain.map(refOf);
    expect(w.record('parent')?.agents).toEqual([
      { place: 'deep-a', ...a },
      { place: 'deep-b', ...b, callee: true },
      { place: 'deep-c', ...c, callee: true },
      { place: 'deep-d', ...d, callee: true },
      { place: 'deep-e', ...e, callee: true },
    ]);
    expect(w.agentStore.puts.map((ref) => ref.name).sort()).toEqual(['deep-a', 'deep-b', 'deep-c', 'deep-d', 'deep-e']);
    // Calls that meet again (lead → helper → checker) list each callee once.
    expect((await world('lead')).record('parent')?.agents).toEqual([
      { place: 'lead', ...refOf(lead) },
      { place: 'helper', ...refOf(helper), callee: true },
      { place: 'checker', ...refOf(checker), callee: true },
    ]);
  });
});

describe('the inference step of an agent that calls agents', () => {
  it('starts a child for each call of an agent it may call, and marks the turn as calling agents', async () => {
    const w = await world();
    const step = await w.step('parent', 'lead', calls(['toolu_1', 'agent_helper', { goal: 'Add.' }], ['toolu_2', 'calculator', { operation: 'add', a: 2, b: 3 }], ['toolu_3', 'agent_checker', { goal: 'Check.' }], ['toolu_4', 'write_file', { path: 'a', content: '' }]));
    // The checker is a callee of the run (the helper's), not of the lead: its call is an unknown tool's, and starts nothing.
    expect(step.toolCalls).toEqual([
      { id: 'toolu_1', name: 'agent_helper', needsApproval: false, child: helperChild() },
      { id: 'toolu_2', name: 'calculator', needsApproval: false },
      { id: 'toolu_3', name: 'agent_checker', needsApproval: false },
      { id: 'toolu_4', name: 'write_file', needsApproval: false },
    ]);
    expect(step.callsAgents).toBe(true);
    expect(w.model.requests[0]?.tools.map((t) => t.name)).toEqual(['calculator', 'agent_helper']);
    expect(w.record(childRunIdOf('parent', 'toolu_1'))).toMatchObject({ parentRunId: 'parent', status: 'running', agent: refOf(helper) });
    expect(w.record(childRunIdOf('parent', 'toolu_3'))).toBeUndefined();
    expect(w.record('parent')?.children).toEqual({ toolu_1: { runId: childRunIdOf('parent', 'toolu_1'), agent: 'helper' } });
    // No call is answered at the step.
    expect(await w.resultOf(w.call('parent', 'lead', step.seq, 'toolu_1'))).toBeUndefined();
  });

  it('starts each child once when the step runs again, returning the same children', async () => {
    const w = await leadCalls();
    const created = structuredClone(w.record(w.childId));
    const again = await inferenceStep({ runId: 'parent', agent: 'lead', iteration: 0 }, w.deps);
    expect(again).toEqual(w.turn);
    expect(w.model.requests).toHaveLength(1);
    expect(w.record(w.childId)).toEqual(created);
  });

  it('leaves a turn that calls no agent unmarked', async () => {
    const w = await world();
    const step = await w.step('parent', 'lead', calls(['toolu_2', 'calculator', { operation: 'add', a: 2, b: 3 }]));
    expect(step.toolCalls).toEqual([{ id: 'toolu_2', name: 'calculator', needsApproval: false }]);
    expect('callsAgents' in step).toBe(false);
    const answered = await w.step('parent', 'lead', answers('5'));
    expect([answered.toolCalls, 'callsAgents' in answered]).toEqual([[], false]);
    expect([...w.runs.runs.keys()].sort()).toEqual(['parent', 'run-1']);
  });

  it('starts no child for a turn that spends the run\'s budget, whose calls it answers as not run', async () => {
    const w = await world();
    Object.assign(w.record('parent') as Run, { estimatedCostUsd: 2 - sonnet(500, 0) });
    const turn = calls(['toolu_1', 'agent_helper', { goal: 'Add.' }], ['toolu_2', 'calculator', { operation: 'add', a: 2, b: 3 }]);
    await expect(w.step('parent', 'lead', turn)).rejects.toThrow(BudgetExceeded);
    expect([...w.runs.runs.keys()].sort()).toEqual(['parent', 'run-1']);
    expect(w.record('parent')?.children).toBeUndefined();
    const result = await w.resultOf(w.call('parent', 'lead', 1, 'toolu_1'));
    expect([result?.is_error, typeof result?.content === 'string' && result.content.includes('budget')]).toEqual([true, true]);
  });
});

describe('startChild', () => {
  it('creates the child run: the callee at the version the run recorded, the parent\'s owner and gates, the callee\'s own policy, one level deeper', async () => {
    const w = await world('helper');
    const step = await w.step('parent', 'helper', calls(['toolu_1', 'agent_checker', { goal: 'Is 2 + 3 = 5?', context: 'The helper added it.' }]));
    const childId = childRunIdOf('parent', 'toolu_1');

    const child: ChildStart = { name: `${childId}-checker`, runId: childId, agent: 'checker', label: 'checker', conversationId: `run/${childId}/checker`, maxIterations: 25, model: '' };
    expect(step.toolCalls).toEqual([{ id: 'toolu_1', name: 'agent_checker', needsApproval: false, child }]);
    expect(w.record(childId)).toEqual({
      runId: childId,
      mode: 'single',
      goal: 'Is 2 + 3 = 5?\n\nContext:\nThe helper added it.',
      owner,
      agent: refOf(checker),
      // The child calls agents at the versions the root recorded.
      agents: [
        { place: 'checker', ...refOf(checker) },
        { place: 'checker', ...refOf(checker), callee: true },
      ],
      parentRunId: 'parent',
      depth: 1,
      // The deployment's gate the parent carries, and the checker's own gate and rule as its layer (built-in tools in their order).
      approvals: {
        tools: ['calculator', 'write_file'],
        layers: [
          { from: 'deployment', tools: ['write_file'] },
          { from: 'agent:checker', tools: ['calculator'], rules: [{ tool: 'read_file', input: { path: 'secret/**' }, action: 'deny' }] },
        ],
      },
      // What the parent had left of the helper's budget (the turn calling the checker spent 1,000 tokens in and 100 out).
      budget: { maxUsd: 1 - sonnet(1_000, 100) },
      output: { schema: verdictSchema },
      status: 'running',
      phase: 'executing',
      currentAgent: 'checker',
      iterations: {},
      usage: zero,
      createdAt: now,
      updatedAt: now,
    });
    expect(w.record('parent')?.children).toEqual({ toolu_1: { runId: childId, agent: 'checker' } });
  });

  it('takes the goal alone without context, and the callee\'s iteration limit', async () => {
    const { turn, childId, record } = await leadCalls();
    expect(turn.toolCalls[0]?.child?.maxIterations).toBe(7);
    expect(record(childId)).toMatchObject({ goal: 'Add 2 and 3.', depth: 1, parentRunId: 'parent', agent: refOf(helper) });
    expect(record(childId)?.goal).toBe('Add 2 and 3.');
  });

  it('passes on that the parent has taken in untrusted content: the child\'s goal is the parent\'s model output', async () => {
    const w = await world();
    await w.start('parent', 'toolu_1', 'agent_helper', { goal: 'Add.' });
    expect(w.record(childRunIdOf('parent', 'toolu_1'))?.untrustedContent).toBeUndefined();
    Object.assign(w.record('parent') as Run, { untrustedContent: true });
    await w.start('parent', 'toolu_2', 'agent_helper', { goal: 'Add.' });
    expect(w.record(childRunIdOf('parent', 'toolu_2'))?.untrustedContent).toBe(true);
  });

  it.each<[string, Run['usage'], number, Run['budget']]>([
    ['the callee\'s own dollars when the parent has more left', tokens(1_000, 0), 0.5, { maxUsd: 1, maxTokens: 99_000 }],
    ['the parent\'s dollars when it has less left than the callee\'s own', tokens(10_000, 0), 1.25, { maxUsd: 0.75, maxTokens: 90_000 }],
    ['a sliver of a dollar and one token when the parent spent all', tokens(100_000, 1), 2.5, { maxUsd: 0.000001, maxTokens: 1 }],
  ])('caps the child\'s budget field by field: %s', async (_case, spent, costUsd, expected) => {
    const w = await world();
    Object.assign(w.record('parent') as Run, { usage: spent, estimatedCostUsd: costUsd });
    const started = await w.start('parent', 'toolu_1', 'agent_helper', { goal: 'Add.' });
    expect(started).toEqual({ child: helperChild() });
    expect(w.record(childRunIdOf('parent', 'toolu_1'))?.budget).toEqual(expected);
  });

  it('gives the child no budget when neither the parent nor the callee has one', async () => {
    const w = await world('deep-a');
    const step = await w.step('parent', 'deep-a', calls(['toolu_b', 'agent_deep_b', { goal: 'Go.' }]));
    expect(step.toolCalls[0]?.child?.runId).toBe(childRunIdOf('parent', 'toolu_b'));
    const child = w.record(childRunIdOf('parent', 'toolu_b'));
    expect([child?.status, child !== undefined && 'budget' in child]).toEqual(['running', false]);
    // Nor a policy of its own: the deployment's gate alone.
    expect(child?.approvals).toEqual({ tools: ['write_file'], layers: [{ from: 'deployment', tools: ['write_file'] }] });
  });

  it('creates the child once however often it is asked, and keeps what it was created with', async () => {
    const w = await leadCalls();
    const created = structuredClone(w.record(w.childId));
    // The parent spends more before the retry: the child's budget stays as it was made.
    Object.assign(w.record('parent') as Run, { estimatedCostUsd: 1.9 });
    expect(await w.start('parent', 'toolu_1', 'agent_helper', { goal: 'Add 2 and 3.' })).toEqual({ child: w.turn.toolCalls[0]?.child });
    expect(w.turn.toolCalls[0]?.child).toEqual(helperChild());
    expect(w.record(w.childId)).toEqual(created);
    expect([...w.runs.runs.keys()].filter((id) => w.record(id)?.parentRunId === 'parent')).toEqual([w.childId]);
    expect(w.record('parent')?.children).toEqual({ toolu_1: { runId: w.childId, agent: 'helper' } });
  });

  it('gives each call its own child, the same id for every attempt of a call', () => {
    expect(childRunIdOf('parent', 'toolu_1')).toBe(childRunIdOf('parent', 'toolu_1'));
    expect(new Set([childRunIdOf('parent', 'toolu_1'), childRunIdOf('parent', 'toolu_2'), childRunIdOf('other', 'toolu_1')]).size).toBe(3);
    expect(childRunIdOf('parent', 'toolu_1')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  describe('starts nothing, recording nothing, for', () => {
    const nothingNew = (w: Awaited<ReturnType<typeof world>>, runId: string, before: Set<string>) => {
      expect([...w.runs.runs.keys()].filter((id) => !before.has(id))).toEqual([]);
      expect(w.record(runId)?.children).toBeUndefined();
    };
    /** Asked directly, startChild refuses with `refused`; at the step, the call is answered with it and does not run. */
    const expectRefused = async (w: Awaited<ReturnType<typeof world>>, runId: string, place: string, [id, name, input]: [string, string, unknown], refused: string | RegExp) => {
      const before = new Set(w.runs.runs.keys());
      const step = await w.step(runId, place, calls(['toolu_c', 'calculator', { operation: 'add', a: 1, b: 1 }], [id, name, input]));
      expect(step.toolCalls).toEqual([{ id: 'toolu_c', name: 'calculator', needsApproval: false }]);
      expect('callsAgents' in step).toBe(false);
      const result = await w.resultOf(w.call(runId, place, step.seq, id));
      expect(result).toEqual({ type: 'tool_result', tool_use_id: id, content: expect.stringMatching(refused), is_error: true });
      // Stored as not run (the calculator's result is its own step's to store).
      const records = [...(w.conversations.items.get(conversationIdOf(runId, place))?.values() ?? [])].filter((r) => r.kind === 'result');
      expect(records).toEqual([{ kind: 'result', seq: step.seq, index: 1, result, ran: false }]);
      const direct = await w.start(runId, id, name, input);
      expect(direct).toEqual({ refused: result?.content });
      nothingNew(w, runId, before);
    };

    it('a call that names no agent the run may call', async () => {
      const w = await world();
      const before = new Set(w.runs.runs.keys());
      const step = await w.step('parent', 'lead', calls(['toolu_c', 'calculator', { operation: 'add', a: 1, b: 1 }], ['toolu_g', 'agent_ghost', { goal: 'Boo.' }], ['toolu_h', 'agent_helper_2', { goal: 'Go.' }]));
      // The step starts children only for the agents its agent may call: these are calls of unknown tools.
      expect(step.toolCalls.map((c) => [c.id, 'child' in c])).toEqual([['toolu_c', false], ['toolu_g', false], ['toolu_h', false]]);
      for (const [id, name] of [['toolu_c', 'calculator'], ['toolu_g', 'agent_ghost'], ['toolu_h', 'agent_helper_2']] as const) {
        expect(await w.start('parent', id, name, { goal: 'Go.' })).toEqual({ refused: 'This run may not call that agent.' });
      }
      nothingNew(w, 'parent', before);
    });

    it('a call of an agent the step\'s agent offers but the run did not record as a callee', async () => {
      const w = await world();
      const parent = w.record('parent') as Run;
      const before = new Set(w.runs.runs.keys());
      const agents = parent.agents;
      // The lead's profile offers the helper, read before the run's callees are dropped.
      const profile = await profileFor('lead', agents, w.agentStore);
      parent.agents = agents?.filter((a) => !a.callee);
      const step = await w.step('parent', 'lead', calls(['toolu_h', 'agent_helper', { goal: 'Go.' }]), { ...w.deps, profile: () => profile });
      expect(step.toolCalls).toEqual([]);
      expect(await w.resultOf(w.call('parent', 'lead', step.seq, 'toolu_h'))).toEqual({ type: 'tool_result', tool_use_id: 'toolu_h', content: 'This run may not call that agent.', is_error: true });
      nothingNew(w, 'parent', before);
    });

    it.each<[string, unknown, RegExp]>([
      ['no goal', {}, /^Invalid input for agent_helper: goal: /],
      ['an empty goal', { goal: '  ' }, /^Invalid input for agent_helper: goal: /],
      ['a goal that is not text', { goal: 5 }, /^Invalid input for agent_helper: goal: /],
      ['a field the input does not have', { goal: 'Add.', urgency: 'high' }, /^Invalid input for agent_helper: \(input\): .*urgency/],
      ['context that is not text', { goal: 'Add.', context: ['a'] }, /^Invalid input for agent_helper: context: /],
      ['a goal longer than a run\'s', { goal: 'x'.repeat(100_001) }, /^Invalid input for agent_helper: goal: /],
    ])('input with %s', async (_case, input, refused) => {
      const w = await world();
      await expectRefused(w, 'parent', 'lead', ['toolu_1', 'agent_helper', input], refused);
    });

    it.each<[string, (run: Run) => void]>([
      ['cancelled', (run) => Object.assign(run, { status: 'cancelled', phase: 'cancelled' })],
      ['failed', (run) => Object.assign(run, { status: 'failed', phase: 'failed' })],
      ['succeeded', (run) => Object.assign(run, { status: 'succeeded', phase: 'complete' })],
    ])('a parent that has %s', async (_case, end) => {
      const w = await world();
      end(w.record('parent') as Run);
      const before = new Set(w.runs.runs.keys());
      expect(await w.start('parent', 'toolu_1', 'agent_helper', { goal: 'Add.' })).toEqual({ refused: 'This run has ended.' });
      nothingNew(w, 'parent', before);
    });

    it(`a call ${maxAgentDepth + 1} deep, after calls down to ${maxAgentDepth} deep`, async () => {
      const w = await world('deep-a');
      let runId = 'parent';
      const depths: (number | undefined)[] = [];
      for (const [i, next] of chain.slice(1, 1 + maxAgentDepth).entries()) {
        const place = chain[i]!.name;
        const id = `toolu_${next.name}`;
        const step = await w.step(runId, place, calls([id, `agent_${next.name.replace('-', '_')}`, { goal: 'Deeper.' }]));
        expect(step.toolCalls[0]?.child?.agent).toBe(next.name);
        runId = childRunIdOf(runId, id);
        depths.push(w.record(runId)?.depth);
      }
      expect(depths).toEqual([1, 2, 3]);
      await expectRefused(w, runId, 'deep-d', ['toolu_deep-e', 'agent_deep_e', { goal: 'Deeper still.' }], /^Agents call agents at most 3 deep; this call would be 4 deep\. Do the work yourself\.$/);
    });
  });

  it('fails for a parent run that does not exist', async () => {
    const w = await world();
    w.runs.runs.delete('parent');
    await expect(w.start('parent', 'toolu_1', 'agent_helper', { goal: 'Add.' })).rejects.toThrow(NotFound);
  });
});

describe('childFailed', () => {
  const cases: [string, { Error?: string; Cause?: string }, { code: string; message: string }][] = [
    ['the child\'s own error and cause, from the nested execution\'s JSON cause', { Error: 'States.TaskFailed', Cause: JSON.stringify({ Error: 'MaxIterationsExceeded', Cause: 'The agent used its 7 iterations.' }) }, { code: 'MaxIterationsExceeded', message: 'The agent used its 7 iterations.' }],
    ['the child\'s error with a default message when its cause is not text', { Error: 'States.TaskFailed', Cause: JSON.stringify({ Error: 'BudgetExceeded', Cause: null }) }, { code: 'BudgetExceeded', message: 'The agent loop stopped without a cause.' }],
    ['the failure as it is when its cause is not JSON', { Error: 'States.Timeout', Cause: 'The execution timed out.' }, { code: 'States.Timeout', message: 'The execution timed out.' }],
    ['the failure as it is when its JSON cause names no error', { Error: 'States.TaskFailed', Cause: JSON.stringify({ Status: 'FAILED' }) }, { code: 'States.TaskFailed', message: '{"Status":"FAILED"}' }],
    ['the failure as it is when its JSON cause is not an object', { Error: 'States.TaskFailed', Cause: '42' }, { code: 'States.TaskFailed', message: '42' }],
    ['defaults for a failure that says nothing', {}, { code: 'ExecutionFailed', message: 'The agent loop failed.' }],
  ];

  it.each(cases)('marks the child failed with %s', async (_case, failure, error) => {
    const w = await leadCalls();
    await childFailed(w.input, failure, w.childDeps);
    expect(w.record(w.childId)).toMatchObject({ status: 'failed', phase: 'failed', error: { ...error, agent: 'helper' } });
    expect(w.record('parent')?.status).toBe('running');
  });

  it('marks it once: a later failure, or a child that ended, changes nothing', async () => {
    const w = await leadCalls();
    await childFailed(w.input, { Error: 'First' }, w.childDeps);
    await childFailed(w.input, { Error: 'Second' }, w.childDeps);
    expect(w.record(w.childId)?.error?.code).toBe('First');

    const other = await leadCalls();
    await other.runs.finish(other.childId, { status: 'succeeded', phase: 'complete' });
    await childFailed(other.input, { Error: 'Late' }, other.childDeps);
    expect([other.record(other.childId)?.status, other.record(other.childId)?.error]).toEqual(['succeeded', undefined]);
  });

  it('does nothing for a call whose child was never made', async () => {
    const w = await world();
    await childFailed(w.call('parent', 'lead', 1, 'toolu_1'), { Error: 'Lost' }, w.childDeps);
    expect([...w.runs.runs.keys()].sort()).toEqual(['parent', 'run-1']);
  });
});

describe('the tool step of a call of an agent', () => {
  it('answers with the child\'s answer, ends it as succeeded and adds its spend to the parent\'s', async () => {
    const w = await leadCalls();
    await w.step(w.childId, 'helper', answers('5'));

    expect(await toolStep(w.input, w.deps)).toEqual({ toolUseId: 'toolu_1', isError: false });
    expect((await w.resultOf(w.input))?.content).toEqual(marked('agent_helper', '5'));
    expect(w.record(w.childId)).toMatchObject({ status: 'succeeded', phase: 'complete', result: { response: '5' } });
    const parent = w.record('parent');
    // A child's answer is untrusted content: the parent has taken it in.
    expect(parent?.untrustedContent).toBe(true);
    expect(parent?.usage).toEqual(tokens(1_000 + 2_000, 100 + 50));
    expect(parent?.estimatedCostUsd).toBeCloseTo(sonnet(1_000, 100) + sonnet(2_000, 50), 12);
    // The parent's own agent spent only its own call.
    expect(parent?.usageByAgent?.lead).toEqual(tokens(1_000, 100));
  });

  it('traces the child in its parent\'s trace: its run span under the call\'s span, sent with the call\'s when the call answers', async () => {
    const w = await world();
    const trace = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true };
    Object.assign(w.record('parent') as Run, { trace });
    const spans: SpanRecord[] = [];
    const deps = { ...w.deps, traces: { tracer: { enabled: true, captureContent: false, emit: (span: SpanRecord) => void spans.push(span), flush: async () => undefined }, provider: 'anthropic' } };
    const turn = await w.step('parent', 'lead', calls(['toolu_1', 'agent_helper', { goal: 'Add 2 and 3.' }]), deps);
    const childId = childRunIdOf('parent', 'toolu_1');
    const callSpan = toolSpanId(trace, 'parent', 'toolu_1');
    const child = w.record(childId)?.trace;
    expect(child).toEqual({ traceId: trace.traceId, spanId: expect.stringMatching(/^[0-9a-f]{16}$/), parentSpanId: callSpan, sampled: true });
    // Made again (a retried step), the child names the same span.
    expect((await w.start('parent', 'toolu_1', 'agent_helper', { goal: 'Add 2 and 3.' })) && w.record(childId)?.trace).toEqual(child);
    await w.step(childId, 'helper', answers('5'), deps);
    // The tool step answers a minute after the child was made: the call's span holds the child's.
    await toolStep(w.call('parent', 'lead', turn.seq, 'toolu_1'), { ...deps, clock: () => new Date('2026-01-01T00:01:00.000Z') });
    expect(spans.find((s) => s.spanId === callSpan)?.startTime.toISOString()).toBe(w.record(childId)?.createdAt);
    expect(spans.map((s) => [s.name, s.traceId, s.spanId, s.parentSpanId])).toEqual([
      ['chat claude-sonnet-4-5', trace.traceId, chatSpanId(trace, 'parent', 'lead', 0), agentSpanId(trace, 'parent', 'lead')],
      ['chat claude-sonnet-4-5', trace.traceId, chatSpanId(child!, childId, 'helper', 0), agentSpanId(child!, childId, 'helper')],
      ['execute_tool agent_helper', trace.traceId, callSpan, agentSpanId(trace, 'parent', 'lead')],
      ['invoke_agent helper', trace.traceId, agentSpanId(child!, childId, 'helper'), child!.spanId],
      ['invoke_workflow helper', trace.traceId, child!.spanId, callSpan],
    ]);
  });

  it('sends the spans of ended children whose calls were never answered with the parent\'s, when the parent did not succeed', async () => {
    const w = await world();
    const trace = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true };
    Object.assign(w.record('parent') as Run, { trace });
    const spans: SpanRecord[] = [];
    const traces = { tracer: { enabled: true, captureContent: false, emit: (span: SpanRecord) => void spans.push(span), flush: async () => undefined }, provider: 'anthropic' };
    await w.step('parent', 'lead', calls(['toolu_1', 'agent_helper', { goal: 'Add 2 and 3.' }]), { ...w.deps, traces });
    const childId = childRunIdOf('parent', 'toolu_1');
    await w.step(childId, 'helper', answers('5'), { ...w.deps, traces });
    const ended = { runs: w.runs, conversations: w.conversations, traces };
    // The parent is cancelled while its call waits: the child, cancelled with it, was never collected.
    await w.runs.finish(childId, { status: 'cancelled', phase: 'cancelled' });
    await w.runs.finish('parent', { status: 'cancelled', phase: 'cancelled' });
    spans.length = 0;
    await traceEndedRun('parent', ended);
    const child = w.record(childId)?.trace;
    expect(spans.map((s) => [s.name, s.spanId, s.parentSpanId])).toEqual([
      ['invoke_agent lead', agentSpanId(trace, 'parent', 'lead'), trace.spanId],
      ['invoke_workflow lead', trace.spanId, undefined],
      ['invoke_agent helper', agentSpanId(child!, childId, 'helper'), child!.spanId],
      ['invoke_workflow helper', child!.spanId, toolSpanId(trace, 'parent', 'toolu_1')],
    ]);
    // A parent that succeeded had every call answered, and each answer sent its child's spans.
    Object.assign(w.record('parent') as Run, { status: 'succeeded' });
    spans.length = 0;
    await traceEndedRun('parent', ended);
    expect(spans.map((s) => s.name)).toEqual(['invoke_agent lead', 'invoke_workflow lead']);
  });

  it('answers with the child\'s output as JSON when its agent has an output schema', async () => {
    const w = await world('helper');
    const { seq } = await w.step('parent', 'helper', calls(['toolu_1', 'agent_checker', { goal: 'Is 2 + 3 = 5?' }]));
    const input = w.call('parent', 'helper', seq, 'toolu_1');
    const childId = childRunIdOf('parent', 'toolu_1');
    await w.step(childId, 'checker', { ...use(['toolu_f', finalAnswerTool, { verdict: 'right' }]), usage: tokens(10, 10) });

    expect(w.model.requests[1]?.tools.map((t) => t.name)).toEqual(['calculator', 'read_file', finalAnswerTool]);
    expect(await toolStep(input, w.deps)).toEqual({ toolUseId: 'toolu_1', isError: false });
    expect((await w.resultOf(input))?.content).toEqual(marked('agent_checker', '{"verdict":"right"}'));
  });

  it.each<[string, (w: Awaited<ReturnType<typeof leadCalls>>) => Promise<unknown>, (childId: string) => string, Partial<Run>]>([
    [
      'failed',
      (w) => childFailed(w.input, { Error: 'States.TaskFailed', Cause: JSON.stringify({ Error: 'MaxIterationsExceeded', Cause: 'Out of iterations.' }) }, w.childDeps),
      (id) => `agent_helper failed: the child run ${id} failed (MaxIterationsExceeded): Out of iterations.`,
      { status: 'failed', error: { code: 'MaxIterationsExceeded', message: 'Out of iterations.', agent: 'helper' } },
    ],
    [
      'ended without an answer',
      (w) => w.step(w.childId, 'helper', calls(['toolu_x', 'calculator', { operation: 'add', a: 2, b: 3 }])),
      (id) => `agent_helper failed: the child run ${id} failed (NoAnswer): The agent ended without an answer.`,
      { status: 'failed', phase: 'failed', error: { code: 'NoAnswer', message: 'The agent ended without an answer.' } },
    ],
    ['was cancelled', (w) => w.runs.cancel(w.childId), (id) => `agent_helper failed: the child run ${id} was cancelled.`, { status: 'cancelled' }],
  ])('answers with a tool error when the child %s, and adds its spend all the same', async (_case, outcome, message, child) => {
    const w = await leadCalls();
    await w.step(w.childId, 'helper', calls(['toolu_y', 'calculator', { operation: 'add', a: 1, b: 1 }]));
    await outcome(w);
    const spent = structuredClone(w.record(w.childId)?.usage);

    expect(await toolStep(w.input, w.deps)).toEqual({ toolUseId: 'toolu_1', isError: true });
    expect(await w.resultOf(w.input)).toEqual({ type: 'tool_result', tool_use_id: 'toolu_1', content: message(w.childId), is_error: true });
    expect(w.record(w.childId)).toMatchObject(child);
    expect(w.record('parent')?.usage.inputTokens).toBe(1_000 + (spent?.inputTokens ?? NaN));
  });

  /** The lead called the helper, but (as if the step had not) no child was started: collect's safety path. */
  const unstarted = async () => {
    const w = await world();
    const withoutChildren = { ...w.deps, features: inferenceFeatures.filter((f) => f.name !== 'children') };
    const step = await w.step('parent', 'lead', calls(['toolu_1', 'agent_helper', { goal: 'Add.' }]), withoutChildren);
    expect(step.toolCalls).toEqual([{ id: 'toolu_1', name: 'agent_helper', needsApproval: false }]);
    return { ...w, input: w.call('parent', 'lead', step.seq, 'toolu_1') };
  };

  it('answers with a tool error saying how deep a call would be when its child was not started for being too deep', async () => {
    const w = await unstarted();
    Object.assign(w.record('parent') as Run, { depth: maxAgentDepth });
    expect(await toolStep(w.input, w.deps)).toEqual({ toolUseId: 'toolu_1', isError: true });
    expect((await w.resultOf(w.input))?.content).toBe('agent_helper failed: agents call agents at most 3 deep; this call would be 4 deep. Do the work yourself.');
  });

  it('answers with a tool error when the child was not started for another reason', async () => {
    const w = await unstarted();
    Object.assign(w.record('parent') as Run, { depth: maxAgentDepth - 1 });
    expect(await toolStep(w.input, w.deps)).toEqual({ toolUseId: 'toolu_1', isError: true });
    expect((await w.resultOf(w.input))?.content).toBe('agent_helper failed: the agent was not started: this run has ended or may not call it.');
    expect([...w.runs.runs.keys()].sort()).toEqual(['parent', 'run-1']);
  });

  it('leaves a child that was cancelled while the tool step read it cancelled', async () => {
    const w = await leadCalls();
    await w.step(w.childId, 'helper', answers('5'));
    // The cancel lands between the tool step's read of the child (running) and its end of it.
    const get = w.runs.get.bind(w.runs);
    let raced = false;
    w.runs.get = async (runId) => {
      const read = await get(runId);
      if (runId === w.childId && !raced) {
        raced = true;
        await w.runs.cancel(runId);
      }
      return read;
    };
    expect(await toolStep(w.input, w.deps)).toEqual({ toolUseId: 'toolu_1', isError: true });
    expect(w.record(w.childId)?.status).toBe('cancelled');
    expect((await w.resultOf(w.input))?.content).toBe(`agent_helper failed: the child run ${w.childId} was cancelled.`);
  });

  it('adds the child\'s spend once and ends it once when the tool step runs again after a fault', async () => {
    const w = await leadCalls();
    await w.step(w.childId, 'helper', answers('5'));
    const putResult = w.conversations.putResult.bind(w.conversations);
    let faults = 1;
    w.conversations.putResult = async (...args) => {
      if (faults-- > 0) throw new Error('throttled');
      return putResult(...args);
    };
    const finish = w.runs.finish.bind(w.runs);
    const finished: string[] = [];
    w.runs.finish = async (runId, outcome, options) => {
      const changed = await finish(runId, outcome, options);
      if (changed) finished.push(runId);
      return changed;
    };

    await expect(toolStep(w.input, w.deps)).rejects.toThrow('throttled');
    expect(await toolStep(w.input, w.deps)).toEqual({ toolUseId: 'toolu_1', isError: false });
    // Once stored, the result is answered without running the tool at all.
    expect(await toolStep(w.input, w.deps)).toEqual({ toolUseId: 'toolu_1', isError: false });
    expect(w.record('parent')?.usage).toEqual(tokens(3_000, 150));
    expect(w.record('parent')?.estimatedCostUsd).toBeCloseTo(sonnet(1_000, 100) + sonnet(2_000, 50), 12);
    expect(finished).toEqual([w.childId]);
  });
});

describe('cancelRun of a run whose agents called agents', () => {
  it('cancels its children and theirs that still run, leaving those that ended', async () => {
    const w = await world('deep-a');
    const ids: string[] = ['parent'];
    for (const [i, next] of chain.slice(1, 4).entries()) {
      const runId = ids.at(-1)!;
      const id = `toolu_${i}`;
      const step = await w.step(runId, chain[i]!.name, calls([id, `agent_${next.name.replace('-', '_')}`, { goal: 'Deeper.' }]));
      expect(step.toolCalls[0]?.child?.runId).toBe(childRunIdOf(runId, id));
      ids.push(childRunIdOf(runId, id));
    }
    // A second child of the root that already answered.
    await w.step('parent', 'deep-a', calls(['toolu_done', 'agent_deep_b', { goal: 'Quick.' }]));
    const done = childRunIdOf('parent', 'toolu_done');
    await w.runs.finish(done, { status: 'succeeded', phase: 'complete', result: { response: 'Done.', actionsTaken: [] } });

    expect(await cancelRun('parent', { runs: w.runs, starter: w.starter })).toBe(true);
    expect(ids.map((id) => w.record(id)?.status)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
    expect(w.record(done)?.status).toBe('succeeded');
    // Stopping the root's execution stops the nested ones: only the root is stopped and announced.
    expect([w.starter.stopped, w.starter.announced]).toEqual([['parent'], ['parent']]);
  });

  it('leaves the parent of a cancelled child running', async () => {
    const w = await leadCalls();
    expect(await cancelRun(w.childId, { runs: w.runs, starter: w.starter })).toBe(true);
    expect([w.record(w.childId)?.status, w.record('parent')?.status]).toEqual(['cancelled', 'running']);
  });
});

// ── The stream ─────────────────────────────────────────────────────────────

const streamUsage = tokens(100, 20);
function put(world: World, seq: number, role: 'user' | 'assistant', content: ContentBlock[]) {
  world.conversation('run/run-1/lead').set(messageKey(seq), {
    kind: 'message',
    seq,
    role,
    content,
    meta: { runId: 'run-1', iteration: 0, ...(role === 'assistant' ? { usage: streamUsage, model: 'claude-sonnet-4-5', stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn' } : {}) },
  });
}
function putResult(world: World, seq: number, index: number, toolUseId: string, content: string, isError = false) {
  world.conversation('run/run-1/lead').set(resultKey(seq, index), { kind: 'result', seq, index, result: { type: 'tool_result', tool_use_id: toolUseId, content, ...(isError ? { is_error: true } : {}) } });
}
const customs = (events: AGUIEvent[], name: string) => events.filter((e) => e.type === EventType.CUSTOM && e.name === name).map((e) => (e as { value: unknown }).value);

describe('the stream of a run whose agent calls agents', () => {
  const leadRun = () =>
    newRun('run-1', 'Add up.', {
      phase: 'idle',
      agents: [
        { place: 'lead', ...refOf(lead) },
        { place: 'helper', ...refOf(helper), callee: true },
        { place: 'single', ...refOf(builtinAgents[0]!), callee: true },
      ],
    });

  it('shows each call of an agent starting a child run, named by its id, and ending with the call\'s result', async () => {
    const world = new World(leadRun());
    put(world, 0, 'user', [{ type: 'text', text: 'Add up.' }]);
    put(world, 1, 'assistant', [
      { type: 'tool_use', id: 'toolu_h', name: 'agent_helper', input: { goal: 'Add 2 and 3.' } },
      { type: 'tool_use', id: 'toolu_c', name: 'calculator', input: { operation: 'add', a: 1, b: 1 } },
      { type: 'tool_use', id: 'toolu_a', name: 'agent_assistant', input: { goal: 'Say hi.' } },
    ]);
    putResult(world, 1, 0, 'toolu_h', '5');
    putResult(world, 1, 1, 'toolu_c', '2');
    putResult(world, 1, 2, 'toolu_a', 'agent_assistant failed: the child run … was cancelled.', true);
    world.run.children = { toolu_h: { runId: childRunIdOf('run-1', 'toolu_h'), agent: 'helper' }, toolu_a: { runId: childRunIdOf('run-1', 'toolu_a'), agent: 'single' } };
    put(world, 2, 'user', []);
    put(world, 3, 'assistant', [{ type: 'text', text: 'It is 5.' }]);
    Object.assign(world.run, { status: 'succeeded', phase: 'complete', result: { response: 'It is 5.', actionsTaken: [] } });

    const events = (await readAll(world)).map((e) => e.event);
    const names = events.filter((e) => e.type !== EventType.TOOL_CALL_ARGS && e.type !== EventType.TEXT_MESSAGE_CONTENT).map((e) => (e.type === EventType.CUSTOM ? e.name : e.type));
    const ofCalls = names.slice(names.indexOf('TOOL_CALL_START'), names.indexOf('TEXT_MESSAGE_START'));
    expect(ofCalls).toEqual([
      'TOOL_CALL_START',
      'TOOL_CALL_END',
      'TOOL_CALL_START',
      'TOOL_CALL_END',
      'TOOL_CALL_START',
      'TOOL_CALL_END',
      'stepwise.usage',
      'stepwise.child_run_started',
      'stepwise.child_run_started',
      'TOOL_CALL_RESULT',
      'stepwise.tool_result',
      'stepwise.child_run_ended',
      'TOOL_CALL_RESULT',
      'stepwise.tool_result',
      'TOOL_CALL_RESULT',
      'stepwise.tool_result',
      'stepwise.child_run_ended',
    ]);
    expect(customs(events, 'stepwise.child_run_started')).toEqual([
      { toolCallId: 'toolu_h', runId: childRunIdOf('run-1', 'toolu_h'), agent: 'helper' },
      // The built-in assistant works at its place, "single".
      { toolCallId: 'toolu_a', runId: childRunIdOf('run-1', 'toolu_a'), agent: 'single' },
    ]);
    expect(customs(events, 'stepwise.child_run_ended')).toEqual([
      { toolCallId: 'toolu_h', runId: childRunIdOf('run-1', 'toolu_h'), isError: false },
      { toolCallId: 'toolu_a', runId: childRunIdOf('run-1', 'toolu_a'), isError: true },
    ]);
    // The callees are no steps of the run: only its own agent works in it.
    expect(events.filter((e) => e.type === EventType.STEP_STARTED).map((e) => (e as { stepName: string }).stepName)).toEqual(['lead']);
  });

  it('shows a child started while its call waits for the child, before any result', async () => {
    const world = new World(leadRun());
    put(world, 0, 'user', [{ type: 'text', text: 'Add up.' }]);
    put(world, 1, 'assistant', [{ type: 'tool_use', id: 'toolu_h', name: 'agent_helper', input: { goal: 'Add 2 and 3.' } }]);
    // The run goes on: what a watcher sees so far. Until the run records the child, nothing says it started.
    const reader = new RunEventReader(world, structuredClone(world.run));
    const before = (await reader.tick()).events.map((e) => e.event);
    expect(customs(before, 'stepwise.child_run_started')).toEqual([]);
    world.run.children = { toolu_h: { runId: childRunIdOf('run-1', 'toolu_h'), agent: 'helper' } };
    // The record read moves the stream on at its next read of the conversation.
    const seen: AGUIEvent[] = [];
    let tick = await reader.tick();
    seen.push(...tick.events.map((e) => e.event));
    while (tick.again) {
      tick = await reader.tick();
      seen.push(...tick.events.map((e) => e.event));
    }
    expect(tick.done).toBe(false);
    expect(customs(seen, 'stepwise.child_run_started')).toEqual([{ toolCallId: 'toolu_h', runId: childRunIdOf('run-1', 'toolu_h'), agent: 'helper' }]);
    expect(customs(seen, 'stepwise.child_run_ended')).toEqual([]);
    expect(seen.filter((e) => e.type === EventType.TOOL_CALL_RESULT)).toEqual([]);
  });

  it('shows a refused call of an agent (too deep, no budget left) as its tool error, never as a child run', async () => {
    const world = new World(leadRun());
    put(world, 0, 'user', [{ type: 'text', text: 'Add up.' }]);
    put(world, 1, 'assistant', [{ type: 'tool_use', id: 'toolu_h', name: 'agent_helper', input: { goal: 'Add 2 and 3.' } }]);
    putResult(world, 1, 0, 'toolu_h', 'agent_helper was not called: calls of agents nest at most 3 deep.', true);
    put(world, 2, 'user', []);
    put(world, 3, 'assistant', [{ type: 'text', text: 'I could not ask.' }]);
    Object.assign(world.run, { status: 'succeeded', phase: 'complete', result: { response: 'I could not ask.', actionsTaken: [] } });

    const events = (await readAll(world)).map((e) => e.event);
    expect(customs(events, 'stepwise.child_run_started')).toEqual([]);
    expect(customs(events, 'stepwise.child_run_ended')).toEqual([]);
    expect(customs(events, 'stepwise.tool_result')).toEqual([expect.objectContaining({ toolCallId: 'toolu_h', isError: true })]);
  });
});

// ── Workflows ──────────────────────────────────────────────────────────────

describe('a workflow\'s agents', () => {
  const workflowRun = (agentResults?: Run['agentResults']) => ({
    goal: 'Should we ship on Fridays?',
    agents: [
      { place: 'pro', name: 'pro', version: 'aaaaaaaaaaaa', step: 0 },
      { place: 'con', name: 'con', version: 'bbbbbbbbbbbb', step: 0 },
      { place: 'editor', name: 'editor', version: 'cccccccccccc', step: 1 },
      { place: 'helper', name: 'helper', version: 'dddddddddddd', callee: true as const },
    ],
    ...(agentResults ? { agentResults } : {}),
  });

  it('start a first step from the goal alone', () => {
    const run = workflowRun({ pro: { response: 'Yes.', actionsTaken: [] } });
    expect([openingMessage(run, 'pro'), openingMessage(run, 'con')]).toEqual([
      [{ type: 'text', text: 'Should we ship on Fridays?' }],
      [{ type: 'text', text: 'Should we ship on Fridays?' }],
    ]);
  });

  it('start a later step from the goal and each answer of the step before, in order, output as JSON', () => {
    const run = workflowRun({ con: { response: 'ignored', actionsTaken: [], output: { verdict: 'no', reasons: ['weekend'] } }, pro: { response: 'Yes, with care.', actionsTaken: [] } });
    expect(openingMessage(run, 'editor')).toEqual([
      {
        type: 'text',
        text:
          'The user\'s goal:\nShould we ship on Fridays?\n\n' +
          'The answer of pro:\nYes, with care.\n\n' +
          `The answer of con:\n${JSON.stringify({ verdict: 'no', reasons: ['weekend'] }, null, 2)}\n\n` +
          'Continue the work from here.',
      },
    ]);
  });

  it('say so when an agent of the step before left no answer', () => {
    expect((openingMessage(workflowRun({ pro: { response: 'Yes.', actionsTaken: [] } }), 'editor')[0] as { text: string }).text).toContain('The answer of con:\n(no answer)\n\n');
    expect((openingMessage(workflowRun(), 'editor')[0] as { text: string }).text).toContain('The answer of pro:\n(no answer)\n\nThe answer of con:\n(no answer)');
  });

  it('hand their answer over, except the last step\'s, whose answer is the run\'s', () => {
    const run = workflowRun();
    expect(['pro', 'con', 'editor', 'helper', 'ghost'].map((place) => handsOver(run, place))).toEqual([true, true, false, false, false]);
    // plan-and-build's Architect hands over too; a run of one agent, or made before agents were data, never.
    const planAndBuild = { agents: [{ place: 'architect', name: 'architect', version: 'a', step: 0 }, { place: 'coder', name: 'coder', version: 'c', step: 1 }] };
    expect([handsOver(planAndBuild, 'architect'), handsOver(planAndBuild, 'coder')]).toEqual([true, false]);
    expect([handsOver({ agents: [{ place: 'lead', name: 'lead', version: 'l' }] }, 'lead'), handsOver({}, 'single'), handsOver(undefined, 'single')]).toEqual([false, false, false]);
  });

  it('keep the answers of earlier steps apart from the run\'s result, and offer the run\'s output schema to the last step only', async () => {
    const pro = agent('pro');
    const editor = agent('editor');
    const flowCatalog = AgentCatalog.from({ agents: [pro, editor], workflows: [{ name: 'debate', description: 'Argue, then edit.', steps: ['pro', 'editor'] }] });
    const core = await memoryCore();
    const agentStore = new MemoryAgentDefinitionStore();
    const deps = { ...core.deps, agentStore };
    const intakeDeps = { runs: core.runs, starter: new RecordingStarter(), newId: () => 'flow', clock, agents: flowCatalog, agentStore };
    const output = { schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } };
    await createRun(createRunBody(intakeDeps).parse({ goal: 'Ship on Fridays?', workflow: 'debate', output }), intakeDeps, { caller });

    core.model.addTurn(say('Yes.'), use(['toolu_f', finalAnswerTool, { answer: 'Yes, with care.' }]));
    await inferenceStep({ runId: 'flow', agent: 'pro', iteration: 0 }, deps);
    expect([core.runs.runs.get('flow')?.agentResults, core.runs.runs.get('flow')?.result]).toEqual([{ pro: { response: 'Yes.', actionsTaken: [] } }, undefined]);
    await inferenceStep({ runId: 'flow', agent: 'editor', iteration: 0 }, deps);

    const run = core.runs.runs.get('flow');
    expect(run?.agentResults).toEqual({ pro: { response: 'Yes.', actionsTaken: [] } });
    expect(run?.result?.output).toEqual({ answer: 'Yes, with care.' });
    expect(core.model.requests.map((r) => r.tools.map((t) => t.name))).toEqual([[], [finalAnswerTool]]);
    // The editor started from the pro's answer.
    expect(core.model.requests[1]?.messages[0]?.content).toEqual(openingMessage({ goal: 'Ship on Fridays?', agents: run?.agents, agentResults: run?.agentResults }, 'editor'));
    expect(JSON.stringify(core.model.requests[1]?.messages[0]?.content)).toContain('The answer of pro:\\nYes.');
  });
});
