/** Budgets in the core: a run's own (USD, tokens) and its caller's daily one, checked before and after each model call. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { BudgetExceeded } from '../../functions/core/budgets/types.js';
import { dailyBudgetSpent, runBudget, runBudgetSpent, tokensOf, usd } from '../../functions/core/budgets/limits.js';
import { ownerKey } from '../../functions/core/callers/access.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { createRun } from '../../functions/core/intake/create.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import type { Usage } from '../../functions/core/model/messages.js';
import { estimateCost } from '../../functions/core/model/prices.js';
import type { Run } from '../../functions/core/runs/types.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { memoryCore, say, use } from '../support/agents.js';
import { RecordingStarter } from '../support/api.js';
import { MemoryRunStore, MemorySpendStore } from '../support/memory.js';

const sonnet = 'claude-sonnet-4-5';
const owner = { principal: 'iss#alice' };
const day = '2026-01-01';
/** Input tokens only: at Sonnet's $3 per million, 100,000 tokens cost $0.30. */
const tokens = (inputTokens: number, outputTokens = 0): Usage => ({ inputTokens, outputTokens, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
const costing = (turn: ScriptedTurn, inputTokens: number): ScriptedTurn => ({ ...turn, usage: tokens(inputTokens) });
const write = (id: string, path: string) => use([id, 'write_file', { path, content: path }]);

/** A core on fakes that prices its calls (Sonnet), its run owned by alice with `extra` on the record. */
async function pricedCore(extra: Partial<Run> = {}) {
  const core = await memoryCore('Write files.');
  core.deps.settings = { model: sonnet, maxTokens: 1024 };
  const run = core.runs.runs.get('run-1');
  if (run) Object.assign(run, { owner, createdAt: `${day}T09:00:00.000Z`, ...extra });
  return core;
}

const files = async (core: Awaited<ReturnType<typeof pricedCore>>) => (await core.deps.workspaceFor('run-1').list('', 100)).entries.map((e) => e.path);
const loop = (core: Awaited<ReturnType<typeof pricedCore>>) => runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: 10 }, core.deps);

describe('a run’s budget', () => {
  it('stops the run at the call that spends it, runs none of that turn’s tools, and counts exactly what was called', async () => {
    const core = await pricedCore({ budget: { maxUsd: 0.5 } });
    core.model.addTurn(costing(write('toolu_a', 'a.md'), 100_000), costing(write('toolu_b', 'b.md'), 100_000), say('never asked'));

    await expect(loop(core)).rejects.toEqual(new BudgetExceeded("The run's budget of $0.5 is spent: it has cost $0.6 so far."));

    expect(core.model.requests).toHaveLength(2);
    expect(await files(core)).toEqual(['a.md']);
    const turn = await core.conversations.loadTurn(conversationIdOf('run-1', 'single'), 3);
    expect(turn?.results).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'toolu_b',
        content: "Not run: The run's budget of $0.5 is spent: it has cost $0.6 so far. The run stopped before this call.",
        is_error: true,
      },
    ]);
    const run = core.runs.runs.get('run-1');
    expect(run?.usage).toEqual(tokens(200_000));
    expect(run?.estimatedCostUsd).toBeCloseTo(0.6, 12);
  });

  it('stops on tokens too: every token of a call counts, cache reads and writes included', async () => {
    const core = await pricedCore({ budget: { maxTokens: 1_000 } });
    core.model.addTurn(
      { ...write('toolu_a', 'a.md'), usage: { inputTokens: 100, outputTokens: 100, cacheReadInputTokens: 300, cacheCreationInputTokens: 100 } },
      { ...write('toolu_b', 'b.md'), usage: { inputTokens: 100, outputTokens: 100, cacheReadInputTokens: 200, cacheCreationInputTokens: 100 } },
    );
    await expect(loop(core)).rejects.toEqual(new BudgetExceeded("The run's budget of 1,000 tokens is spent: it has used 1,100 so far."));
    expect(core.model.requests).toHaveLength(2);
    expect(await files(core)).toEqual(['a.md']);
  });

  it('refuses a model call once the budget is spent, before calling', async () => {
    const core = await pricedCore({ budget: { maxUsd: 0.25 }, estimatedCostUsd: 0.25 });
    core.model.addTurn(say('never asked'));
    await expect(inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps)).rejects.toBeInstanceOf(BudgetExceeded);
    expect(core.model.requests).toHaveLength(0);
  });

  it('lets a run under its budget finish, and checks nothing for a run without one', async () => {
    for (const budget of [{ maxUsd: 1 }, undefined]) {
      const core = await pricedCore(budget ? { budget } : {});
      core.model.addTurn(costing(write('toolu_a', 'a.md'), 100_000), costing(say('done'), 100_000));
      expect((await loop(core)).response).toBe('done');
    }
  });

  it('counts both agents of a multi-agent run against one budget', async () => {
    const core = await pricedCore({ mode: 'multi', budget: { maxUsd: 0.5 } });
    core.deps.plans = core.runs;
    const plan = { goal: 'Write a.md.', steps: [{ description: 'Write it.', action: 'create_file' }] };
    core.model.addTurn(costing(use(['toolu_p', 'finish_plan', plan]), 100_000), costing(write('toolu_c', 'a.md'), 100_000));
    // The Architect's turn: $0.30, its plan stored; the Coder's first turn reaches $0.60.
    await runAgentLoop({ runId: 'run-1', agent: 'architect', maxIterations: 5 }, core.deps);
    await expect(runAgentLoop({ runId: 'run-1', agent: 'coder', maxIterations: 5 }, core.deps)).rejects.toEqual(
      new BudgetExceeded("The run's budget of $0.5 is spent: it has cost $0.6 so far."),
    );
    expect(await files(core)).toEqual([]);
    expect(core.runs.runs.get('run-1')?.usageByAgent).toEqual({ architect: tokens(100_000), coder: tokens(100_000) });
  });
});

describe('a compaction summary', () => {
  it('is counted before the answer is asked for, so a budget it spends stops the step before that call', async () => {
    const core = await pricedCore({ budget: { maxUsd: 0.52 } });
    core.deps.context = { windowTokens: 200_000, compactAt: 0.8, keepShare: 0.25 };
    // 170,000 tokens ($0.51) after the first turn: the next step compacts first, for $0.03 more.
    core.model.addTurn(costing(write('toolu_a', 'a.md'), 170_000), costing(say('summary'), 10_000), say('never asked'));

    await expect(loop(core)).rejects.toEqual(new BudgetExceeded("The run's budget of $0.52 is spent: it has cost $0.54 so far."));
    expect(core.model.requests).toHaveLength(2);
    expect(core.runs.runs.get('run-1')?.usage).toEqual(tokens(180_000));
  });

  it('is counted once however often its step is retried', async () => {
    const core = await pricedCore();
    core.deps.context = { windowTokens: 200_000, compactAt: 0.8, keepShare: 0.25 };
    core.model.addTurn(costing(write('toolu_a', 'a.md'), 170_000), costing(say('summary'), 10_000));
    core.model.addTurn(() => {
      throw new Error('crash after the summary');
    });
    core.model.addTurn(costing(say('done'), 1_000));
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    await toolStep({ runId: 'run-1', agent: 'single', seq: 1, toolUseId: 'toolu_a' }, core.deps);
    await expect(inferenceStep({ runId: 'run-1', agent: 'single', iteration: 1 }, core.deps)).rejects.toThrow('crash after the summary');
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 1 }, core.deps);
    expect(core.runs.runs.get('run-1')?.usage).toEqual(tokens(181_000));
  });
});

describe('the daily budget of a caller', () => {
  it('copies each run’s cost into its day and stops a running run at its next call once the day is spent', async () => {
    const spend = new MemorySpendStore();
    const core = await pricedCore();
    Object.assign(core.deps, { spend, budgets: { dailyMaxUsd: 1 }, clock: () => new Date(`${day}T12:00:00Z`) });
    core.model.addTurn(costing(write('toolu_a', 'a.md'), 100_000), say('never asked'));
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    await toolStep({ runId: 'run-1', agent: 'single', seq: 1, toolUseId: 'toolu_a' }, core.deps);
    expect(await spend.spentOn(owner, day)).toBeCloseTo(0.3, 12);

    // Another run of alice's spends the rest of the day meanwhile.
    await spend.recordRun(owner, day, 'run-2', 0.7);
    await expect(inferenceStep({ runId: 'run-1', agent: 'single', iteration: 1 }, core.deps)).rejects.toEqual(
      new BudgetExceeded('The daily budget of $1 per caller is spent: your runs have spent $1 on 2026-01-01 (UTC).'),
    );
    expect(core.model.requests).toHaveLength(1);
    // Bob's day is his own.
    expect(await spend.spentOn({ principal: 'iss#bob' }, day)).toBe(0);
  });

  it('counts spend toward the day it was spent: a run started before midnight stops once the new day is spent (it spent $6.36 against $1 when counted toward its start day)', async () => {
    const spend = new MemorySpendStore();
    const core = await pricedCore({ createdAt: `${day}T23:59:00.000Z` });
    let now = new Date(`${day}T23:59:30Z`);
    Object.assign(core.deps, { spend, budgets: { dailyMaxUsd: 1 }, clock: () => now });
    // $0.636 a call (42,400 output tokens at $15 per million): ten of them are the $6.36 the review saw.
    const priced = (turn: ScriptedTurn): ScriptedTurn => ({ ...turn, usage: tokens(0, 42_400) });
    for (let i = 0; i < 9; i++) core.model.addTurn(priced(use([`toolu_${i}`, 'calculator', { operation: 'add', a: i, b: 1 }])));
    core.model.addTurn(priced(say('done')));
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    await toolStep({ runId: 'run-1', agent: 'single', seq: 1, toolUseId: 'toolu_0' }, core.deps);
    now = new Date('2026-01-02T00:00:30Z');
    await expect(loop(core)).rejects.toEqual(
      new BudgetExceeded('The daily budget of $1 per caller is spent: your runs have spent $1.272 on 2026-01-02 (UTC).'),
    );
    expect(core.model.requests).toHaveLength(3);
    expect(await spend.spentOn(owner, day)).toBeCloseTo(0.636, 12);
    expect(await spend.spentOn(owner, '2026-01-02')).toBeCloseTo(1.272, 12);
    expect(core.runs.runs.get('run-1')?.spentByDay).toEqual({ [day]: expect.closeTo(0.636, 12), '2026-01-02': expect.closeTo(1.272, 12) });
  });

  it('refuses a new run at intake once spent, writing nothing; the next day it starts', async () => {
    const spend = new MemorySpendStore();
    await spend.recordRun(owner, day, 'run-0', 1.5);
    let today = `${day}T23:59:59Z`;
    const deps = { runs: new MemoryRunStore(), starter: new RecordingStarter(), newId: () => 'run-9', clock: () => new Date(today), spend, budgets: { dailyMaxUsd: 1 } };
    const body = { goal: 'Go.', mode: 'single' as const, maxIterations: 5 };
    await expect(createRun(body, deps, { caller: { ...owner, scopes: [] } })).rejects.toEqual(
      new BudgetExceeded('The daily budget of $1 per caller is spent: your runs have spent $1.5 on 2026-01-01 (UTC). Runs can start again tomorrow (UTC).'),
    );
    expect([deps.runs.runs.size, deps.starter.started.length]).toEqual([0, 0]);
    today = '2026-01-02T00:00:00Z';
    expect(await createRun(body, deps, { caller: { ...owner, scopes: [] } })).toMatchObject({ runId: 'run-9', status: 'running' });
  });
});

describe('a run’s budget at intake', () => {
  it('is the request’s, with the deployment’s default for what it leaves out', () => {
    const settings = { defaultRun: { maxUsd: 2, maxTokens: 1_000_000 } };
    expect(runBudget({ maxUsd: 5 }, settings)).toEqual({ maxUsd: 5, maxTokens: 1_000_000 });
    expect(runBudget(undefined, settings)).toEqual(settings.defaultRun);
    expect(runBudget({ maxTokens: 10 }, undefined)).toEqual({ maxTokens: 10 });
    expect(runBudget(undefined, {})).toBeUndefined();
  });

  it('is stored on the run', async () => {
    const deps = { runs: new MemoryRunStore(), starter: new RecordingStarter(), newId: () => 'run-1', budgets: { defaultRun: { maxUsd: 2 } } };
    await createRun({ goal: 'Go.', mode: 'single', maxIterations: 5, budget: { maxTokens: 50_000 } }, deps, { caller: { ...owner, scopes: [] } });
    expect(deps.runs.runs.get('run-1')?.budget).toEqual({ maxUsd: 2, maxTokens: 50_000 });
  });
});

describe('what counts as spent', () => {
  it('is spent at the limit, not only past it', () => {
    const run = { usage: tokens(1_000), estimatedCostUsd: 0.5 };
    expect([runBudgetSpent({ ...run, budget: { maxUsd: 0.5 } }), runBudgetSpent({ ...run, budget: { maxUsd: 0.51 } })]).toEqual([
      "The run's budget of $0.5 is spent: it has cost $0.5 so far.",
      undefined,
    ]);
    expect(runBudgetSpent({ ...run, budget: { maxTokens: 1_000 } })).toBe("The run's budget of 1,000 tokens is spent: it has used 1,000 so far.");
    expect([dailyBudgetSpent(0.99, 1, day), dailyBudgetSpent(0.5, undefined, day)]).toEqual([undefined, undefined]);
    expect([usd(0.123456), usd(2), tokensOf({ inputTokens: 1, outputTokens: 2, cacheReadInputTokens: 3, cacheCreationInputTokens: 4 })]).toEqual(['$0.1235', '$2', 10]);
  });
});

/**
 * Steps are delivered at least once: a step may die after any write and run again. Whatever the
 * crashes, the run's usage and cost, and the day's spend, count each stored answer exactly once.
 */
describe('budget accounting under retried steps', () => {
  /** Where a step attempt may die: after storing the answer, after counting it on the run, after copying it into the day. */
  const crashPoints = ['append', 'recordStep', 'recordRun'] as const;
  class Crash extends Error {}

  it('never counts a stored answer twice nor not at all, on the run or in the day', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ input: fc.integer({ min: 1, max: 50_000 }), output: fc.integer({ min: 0, max: 5_000 }) }), { minLength: 1, maxLength: 6 }),
        fc.array(fc.constantFrom(...crashPoints, 'none'), { minLength: 1, maxLength: 30 }),
        async (turns, crashes) => {
          const spend = new MemorySpendStore();
          const core = await pricedCore();
          Object.assign(core.deps, { spend, budgets: { dailyMaxUsd: 1_000 }, clock: () => new Date(`${day}T12:00:00Z`) });
          turns.forEach((t, i) => core.model.addTurn({ ...(i < turns.length - 1 ? use([`toolu_${i}`, 'calculator', { operation: 'add', a: i, b: 1 }]) : say('done')), usage: tokens(t.input, t.output) }));
          // Each attempt may die right after one of its writes; the retry must neither recount nor skip.
          let pending = [...crashes];
          const armed = (point: (typeof crashPoints)[number]) => {
            if (pending[0] !== point) return;
            pending = pending.slice(1);
            throw new Crash(point);
          };
          const { conversations, runs } = core;
          const append = conversations.append.bind(conversations);
          conversations.append = async (id, message) => {
            const written = await append(id, message);
            if (message.role === 'assistant') armed('append');
            return written;
          };
          const recordStep = runs.recordStep.bind(runs);
          runs.recordStep = async (...args) => {
            const totals = await recordStep(...args);
            armed('recordStep');
            return totals;
          };
          const recordRun = spend.recordRun.bind(spend);
          spend.recordRun = async (...args) => {
            await recordRun(...args);
            armed('recordRun');
          };
          for (let iteration = 0; iteration < turns.length; iteration++) {
            let step;
            for (let attempt = 0; !step; attempt++) {
              if (pending[0] === 'none') pending = pending.slice(1);
              step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration }, core.deps).catch((error: unknown) => {
                if (!(error instanceof Crash) || attempt > crashes.length) throw error;
                return undefined;
              });
            }
            for (const call of step.toolCalls) await toolStep({ runId: 'run-1', agent: 'single', seq: step.seq, toolUseId: call.id }, core.deps);
          }
          const usage = turns.reduce((sum, t) => ({ ...sum, inputTokens: sum.inputTokens + t.input, outputTokens: sum.outputTokens + t.output }), tokens(0));
          const cost = turns.reduce((sum, t) => sum + (estimateCost(sonnet, tokens(t.input, t.output)) ?? 0), 0);
          const run = core.runs.runs.get('run-1');
          expect(core.model.requests).toHaveLength(turns.length);
          expect(run?.usage).toEqual(usage);
          expect(run?.estimatedCostUsd).toBeCloseTo(cost, 10);
          // The day holds the run's cost as the run record counts it, once.
          expect(spend.runs.get(`${ownerKey(owner)}#${day}#run-1`)).toBe(run?.estimatedCostUsd);
        },
      ),
      { numRuns: 60 },
    );
  });
});
