/**
 * Lambda: the ends of runs. Orchestrator executions that ended outside their states (a rule on
 * Step Functions status events), and the spans of every run that ended (a rule on the run
 * completion events, and the runs this function marks failed; docs/traces.md).
 */
import { type ExecutionEndedOutcome, markEndedRun } from '../core/runs/execution-ended.js';
import { endedRunOf, traceEndedDescendants, traceEndedRun } from '../core/traces/run-ended.js';
import { metricNames } from '../core/telemetry/metrics.js';
import { count, dimensions, instrumented, logger } from '../adapters/aws/telemetry.js';
import { wire } from '../wiring/wire.js';
import { otlpTraces } from '../wiring/tracer.js';

const wiring = wire(process.env, { traces: otlpTraces });
const orchestratorArn = wiring.env.STEPWISE_ORCHESTRATOR_ARN;
if (!orchestratorArn) throw new Error('Stepwise is misconfigured: STEPWISE_ORCHESTRATOR_ARN is not set.');
const deps = { runs: wiring.runs, sessions: wiring.sessions, orchestratorArn };

export async function handler(event: unknown): Promise<ExecutionEndedOutcome | { traced: number }> {
  try {
    return await instrumented({}, () => handle(event));
  } finally {
    // Lambda freezes the process once it answers: the spans go before.
    await wiring.traces.tracer.flush();
  }
}

async function handle(event: unknown): Promise<ExecutionEndedOutcome | { traced: number }> {
  const ended = endedRunOf(event);
  if (ended) return { traced: await traceEndedRun(ended, wiring) };
  const outcome = await markEndedRun(event, deps);
  if (outcome.runId) logger.appendKeys({ runId: outcome.runId });
  if (outcome.marked) {
    dimensions({ status: outcome.status });
    count(metricNames.runsInterrupted);
    logger.warn('Run marked failed: its execution ended outside its states', { error: outcome.error });
    // A run marked failed here has no completion event: its spans are described now.
    await traceEndedRun(outcome.runId, wiring);
  } else {
    logger.info('Execution end needs no change', { reason: outcome.reason });
    // A run that ended through its own states had its children that still ran marked failed just
    // now: their spans are described now (the run's own went with its completion event).
    const run = outcome.runId && wiring.traces.tracer.enabled ? await wiring.runs.get(outcome.runId) : undefined;
    if (run?.trace?.sampled) await traceEndedDescendants(run, wiring);
  }
  return outcome;
}
