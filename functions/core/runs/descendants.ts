/**
 * The child runs a run's calls of agents started, and theirs (functions/core/children/): what a
 * cancel and an execution that ended outside its states reach beyond the run itself.
 */
import type { Run, RunStore } from './types.js';

/**
 * Every child run of `run` and theirs, depth first, each with the id of the run that started it
 * and its record as read before it is yielded (the walk reads it anyway, to find its children).
 */
export async function* descendantsOf(
  run: Pick<Run, 'runId' | 'children'>,
  runs: Pick<RunStore, 'get'>,
): AsyncGenerator<{ runId: string; agent: string; parentRunId: string; record: Run | undefined }> {
  for (const child of Object.values(run.children ?? {})) {
    const record = await runs.get(child.runId);
    yield { ...child, parentRunId: run.runId, record };
    if (record) yield* descendantsOf(record, runs);
  }
}
