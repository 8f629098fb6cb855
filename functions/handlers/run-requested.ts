/** Lambda: `Stepwise Run Requested` events from the bus, through the same intake as POST /runs. */
import { type IntakeOutcome } from '../core/intake/types.js';
import { intakeEvent } from '../core/intake/events.js';
import { metricNames } from '../core/telemetry/metrics.js';
import { count, dimensions, instrumented, logger } from '../adapters/aws/telemetry.js';
import { deadLettersFrom, intakeWiring } from '../wiring/intake.js';
import { wire } from '../wiring/wire.js';

const wiring = wire(process.env);
const deps = {
  ...intakeWiring(wiring, undefined, {
    onCreated: (run) => {
      logger.appendKeys({ runId: run.runId });
      dimensions({ mode: run.mode });
      count(metricNames.runsStarted);
    },
  }),
  deadLetters: deadLettersFrom(wiring.env),
};

export async function handler(event: unknown): Promise<IntakeOutcome> {
  return instrumented({}, async () => {
    const outcome = await intakeEvent(event, deps);
    if (outcome.accepted) logger.info('Run request accepted', { runId: outcome.runId });
    else logger.warn('Run request refused; sent to the dead-letter queue', { reason: outcome.reason });
    return outcome;
  });
}
