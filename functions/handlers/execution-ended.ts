/** Lambda: orchestrator executions that ended outside their states (a rule on Step Functions status events). */
import { type ExecutionEndedOutcome, markEndedRun } from '../core/runs/execution-ended.js';
import { metricNames } from '../core/telemetry/metrics.js';
import { count, dimensions, instrumented, logger } from '../adapters/aws/telemetry.js';
import { wire } from '../wiring/wire.js';

const wiring = wire(process.env);
const orchestratorArn = wiring.env.STEPWISE_ORCHESTRATOR_ARN;
if (!orchestratorArn) throw new Error('Stepwise is misconfigured: STEPWISE_ORCHESTRATOR_ARN is not set.');
const deps = { runs: wiring.runs, sessions: wiring.sessions, orchestratorArn };

export async function handler(event: unknown): Promise<ExecutionEndedOutcome> {
  return instrumented({}, async () => {
    const outcome = await markEndedRun(event, deps);
    if (outcome.runId) logger.appendKeys({ runId: outcome.runId });
    if (outcome.marked) {
      dimensions({ status: outcome.status });
      count(metricNames.runsInterrupted);
      logger.warn('Run marked failed: its execution ended outside its states', { error: outcome.error });
    } else {
      logger.info('Execution end needs no change', { reason: outcome.reason });
    }
    return outcome;
  });
}
