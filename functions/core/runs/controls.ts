/**
 * What a step needs of its run record besides the conversation, read once per warm function
 * when it cannot change.
 */
import type { Run, RunControls, RunStore } from './types.js';

/** What never changes once a run starts, by run id: the agents it follows, its owner, its trace and its memory; read once per warm function (at most 200 runs). */
type FixedParts = Pick<Run, 'agents' | 'owner' | 'trace' | 'memory' | 'sessionId'>;
const fixedParts = new WeakMap<Pick<RunStore, 'get'>, Map<string, FixedParts>>();

function remember(store: Pick<RunStore, 'get'>, runId: string, run: FixedParts): FixedParts {
  let known = fixedParts.get(store);
  if (!known) fixedParts.set(store, (known = new Map()));
  if (known.size >= 200) known.delete(known.keys().next().value ?? '');
  const fixed = {
    ...(run.agents ? { agents: run.agents } : {}),
    ...(run.owner ? { owner: run.owner } : {}),
    ...(run.trace ? { trace: run.trace } : {}),
    ...(run.memory ? { memory: run.memory } : {}),
    ...(run.sessionId !== undefined ? { sessionId: run.sessionId } : {}),
  };
  known.set(runId, fixed);
  return fixed;
}

async function fixedOf(runId: string, runs: Pick<RunStore, 'get'>): Promise<FixedParts> {
  const known = fixedParts.get(runs)?.get(runId);
  if (known) return known;
  return remember(runs, runId, (await runs.get(runId)) ?? {});
}

/** The definitions a run's agents follow, by place; undefined for a run made before agents were data. */
export async function runAgents(runId: string, runs: Pick<RunStore, 'get'>): Promise<Run['agents']> {
  return (await fixedOf(runId, runs)).agents;
}

/** Who started the run (external tools act for this owner); undefined for a run made before runs had owners. */
export async function runOwner(runId: string, runs: Pick<RunStore, 'get'>): Promise<Run['owner']> {
  return (await fixedOf(runId, runs)).owner;
}

/** The run's place in its trace (docs/traces.md); undefined for a run made before runs were traced. */
export async function runTrace(runId: string, runs: Pick<RunStore, 'get'>): Promise<Run['trace']> {
  return (await fixedOf(runId, runs)).trace;
}

/** The run's memory, with what names its scope (owner, session); undefined for a run without memory. */
export async function runMemory(runId: string, runs: Pick<RunStore, 'get'>): Promise<Pick<Run, 'memory' | 'owner' | 'sessionId'> | undefined> {
  const { memory, owner, sessionId } = await fixedOf(runId, runs);
  return memory ? { memory, ...(owner ? { owner } : {}), ...(sessionId !== undefined ? { sessionId } : {}) } : undefined;
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
  const { owner, createdAt, budget, output, usage, estimatedCostUsd, agents, childCostUsd, trace, memory, sessionId } = run;
  remember(deps.runs, runId, run);
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
    ...(trace ? { trace } : {}),
    ...(memory ? { memory } : {}),
    ...(sessionId !== undefined ? { sessionId } : {}),
  };
  if (!budget) {
    if (known.size >= 100) known.delete(known.keys().next().value ?? '');
    known.set(runId, controls);
  }
  return { controls, record: run };
}
