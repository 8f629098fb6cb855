/**
 * `npm run bench:chaos`: the chaos run at bench size (200 runs; `CHAOS_RUNS` and `CHAOS_SEED` to
 * change), printing the faults injected by kind and the outcome table. The CI-sized run is
 * `test/integration/chaos.test.ts`. Printed, not asserted; the process exits 1 if anything was
 * stuck, lost or duplicated.
 */
import '../../local/sdk-warning.js';

import { wire } from '../../functions/wiring/wire.js';
import { Chaos, chaosReport, chaosRun } from '../support/chaos.js';
import { startFixture } from '../support/local-stack.js';

// Injected faults make the functions log warnings by the hundred; the table says what happened.
// (Read when the stack starts and loads the handlers, after this line.)
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';

const runs = Number(process.env.CHAOS_RUNS ?? 200);
const seed = Number(process.env.CHAOS_SEED ?? 2026);
const chaos = new Chaos({ runs, seed, modelFault: 0.25, crash: 0.15, throttle: 0.1, stop: 0.1, redeliver: 0.3, invalidEvents: 10, exhausted: 1 });
const local = await startFixture({}, { wrapHandler: chaos.wrap });
try {
  const outcome = await chaosRun(local, chaos, wire(process.env).conversations);
  console.log(`\n## Chaos run (seed ${seed})\n`);
  console.log(chaosReport(chaos, outcome));
  if (outcome.problems.length) {
    console.log(`\nProblems:\n${outcome.problems.map((p) => `- ${p}`).join('\n')}`);
    process.exitCode = 1;
  }
} finally {
  await local.close();
}
