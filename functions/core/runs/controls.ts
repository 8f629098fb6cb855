/**
 * What a step needs of its run record besides the conversation, read once per warm function
 * when it cannot change.
 */
import type { Run, RunControls, RunStore } from './types.js';

/** The agents runs follow, by run id: fixed when a run starts, so read once per warm function (at most 200 runs). */
const knownAgents = new WeakMap<Pick<RunStore, 'get'>, Map<string, Run['agents'] | null>>();

function remember(store: Pick<RunStore, 'get'>, runId: string, agents: Run['agents']): void {
  let known = knownAgents.get(store);
  if (!known) knownAgents.set(store, (known = new Map()));
  if (known.size >= 200) known.delete(known.keys().next().value ?? '');
  known.set(runId, agents ?? null);
}

/** The definitions a run's agents follow, by place; undefined for a run made before agents were data. */
export async function runAgents(runId: string, runs: Pick<RunStore, 'get'>): Promise<Run['agents']> {
  const known = knownAgents.get(runs)?.get(runId);
  if (known !== undefined) return known ?? undefined;
  const agents = (await runs.get(runId))?.agents;
  remember(runs, runId, agents);
  return agents;
}

/** Runs without a budget whose controls this warm function has read, per store (at most 100 each). */
const knownRuns = new WeakMap<RunStore, Map<string, RunControls>>();

/**
 * The run's controls. Its owner, day and output schema never change, so a warm function reads a
 * run without a budget once; a run with one is read on every step, for what it has spent. The
 * record itself too, when it was read (an agent's first step opens with its goal or plan).
 */
export async function runControls(runId: string, deps: { runs: RunStore }): Promise<{ controls?: RunControls; record?: Run }> {
  let known = knownRuns.get(deps.runs);
  if (!known) knownRuns.set(deps.runs, (known = new Map()));
  const cached = known.get(runId);
  if (cached) return { controls: cached };
  const run = await deps.runs.get(runId);
  if (!run) return {};
  const { owner, createdAt, budget, output, usage, estimatedCostUsd, agents, childCostUsd } = run;
  remember(deps.runs, runId, agents);
  const controls = {
    runId,
    ...(owner ? { owner } : {}),
    createdAt,
    ...(budget ? { budget } : {}),
    ...(output ? { output } : {}),
    usage,
    ...(estimatedCostUsd !== undefined ? { estimatedCostUsd } : {}),
    ...(agents ? { agents } : {}),
    ...(childCostUsd !== undefined ? { childCostUsd } : {}),
  };
  if (!budget) {
    if (known.size >= 100) known.delete(known.keys().next().value ?? '');
    known.set(runId, controls);
  }
  return { controls, record: run };
}
