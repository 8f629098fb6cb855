/**
 * `npm run bench -- --load N` (default 500): the load simulation of issue 37. Starts N runs of the
 * scripted instant model at once on the local stack (the chaos run's runs, with no fault injected:
 * three model turns each, the first with two parallel tool calls), records the partition of every
 * DynamoDB write the emulator receives, table and run indexes (`partitions.ts`), and prints runs
 * started and finished per second, iterations per second, the busiest partition's writes per
 * second per 1,000 concurrent runs, and the chaos run's lost / duplicated / stuck checks.
 *
 * Every run is the local caller's, so all of them share one owner and one tenant: the worst case
 * for the run indexes, whose partitions are per owner and per tenant. Printed, never asserted; the
 * process exits 1 if anything was lost, duplicated or stuck.
 */
import '../../local/sdk-warning.js';

import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { wire } from '../../functions/wiring/wire.js';
import { Chaos, chaosRun } from '../support/chaos.js';
import { startFixture } from '../support/local-stack.js';
import { IndexWrites, type PartitionWrite, busiestPartitions } from './partitions.js';
import { row } from './table.js';

// The functions' warnings would fill the screen; the table says what happened.
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';

/** The step rate and the DynamoDB partition limit the paper figures use (docs/SCALE.md). */
const paperStepsPerSecond = 0.5;
const paperIterationsPerRun = 20;
const partitionWritesPerSecond = 1_000;

const runs = Number(process.argv[2] ?? 500);
const chaos = new Chaos({ runs, seed: 37, modelFault: 0, crash: 0, throttle: 0, stop: 0, redeliver: 0, invalidEvents: 0, exhausted: 0 });
const local = await startFixture({}, { wrapHandler: chaos.wrap });
const dynamoPort = new URL(String(process.env.STEPWISE_DYNAMODB_ENDPOINT)).port;
const writeOperations = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);
const received: { at: number; operation: string; body: string; ok: boolean }[] = [];
let reads = 0;

// Every request the in-process DynamoDB emulator receives, from the functions and from the
// orchestrator's own service integrations alike: a write's body names its item.
subscribe('http.server.request.start', (message) => {
  const { request, response, socket } = message as { request: IncomingMessage; response: ServerResponse; socket: Socket };
  if (String(socket.localPort) !== dynamoPort) return;
  const operation = String(request.headers['x-amz-target'] ?? '').split('.')[1] ?? 'unknown';
  if (!writeOperations.has(operation)) {
    reads++;
    return;
  }
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  response.once('finish', () => received.push({ at: Date.now(), operation, body: Buffer.concat(chunks).toString('utf8'), ok: response.statusCode === 200 }));
});

try {
  const started = Date.now();
  const outcome = await chaosRun(local, chaos, wire(process.env).conversations);
  const ended = started + outcome.wallMs;
  const wallSeconds = outcome.wallMs / 1000;
  const mine = outcome.runs.filter((run) => run.status !== 'running');
  const times = (pick: (run: (typeof mine)[number]) => string) => mine.map((run) => Date.parse(pick(run)));
  const starts = times((run) => run.createdAt);
  const ends = times((run) => run.updatedAt);
  const iterations = outcome.runs.reduce((sum, run) => sum + Object.values(run.iterations).reduce((a: number, b) => a + (b ?? 0), 0), 0);
  // Concurrency averaged over the load's wall time: run-seconds per second.
  const concurrency = mine.reduce((sum, run) => sum + (Date.parse(run.updatedAt) - Date.parse(run.createdAt)), 0) / outcome.wallMs;

  const tracker = new IndexWrites();
  const writes: (PartitionWrite & { at: number })[] = [];
  for (const request of received) {
    // The checks after the load (a run per session) are not part of it.
    if (request.at > ended) continue;
    for (const write of tracker.writes(request)) writes.push({ ...write, at: request.at });
  }
  const busiest = busiestPartitions(writes);

  console.log(`\n## Load: ${runs} runs at once on the local stack (2 cores; one owner, one tenant)\n`);
  console.log(row(['measure', 'value']));
  console.log(row(['---', '---']));
  console.log(row(['runs started per second (POST /runs, the burst)', (mine.length / Math.max(0.001, (Math.max(...starts) - Math.min(...starts)) / 1000)).toFixed(1)]));
  console.log(row(['runs finished per second (over the wall time)', (mine.length / wallSeconds).toFixed(1)]));
  console.log(row(['iterations per second', (iterations / wallSeconds).toFixed(1)]));
  console.log(row(['mean concurrent runs', concurrency.toFixed(0)]));
  console.log(row(['wall time', `${wallSeconds.toFixed(1)} s (last run ended ${((Math.max(...ends) - started) / 1000).toFixed(1)} s after the first start)`]));
  console.log(row(['DynamoDB writes / reads', `${writes.filter((w) => w.where === 'table').length} / ${reads}`]));
  console.log(row(['lost / duplicated / stuck', `${outcome.lost} / ${outcome.duplicated} / ${outcome.stuck}`]));

  console.log(
    `\nBusiest partition of the table and of each run index. Measured: its busiest second here, per 1,000 concurrent runs (the instant model runs ${(iterations / wallSeconds / Math.max(1, concurrency)).toFixed(2)} iterations per second per run here). On paper: a real model's pace, r = ${paperStepsPerSecond} iterations per second and L = ${paperIterationsPerRun} iterations per run: (lifecycle writes per run × r / L + step writes per iteration × r) × 1,000, and the concurrent runs of one tenant at which it reaches ${partitionWritesPerSecond.toLocaleString('en-US')} writes per second.\n`,
  );
  console.log(row(['where', 'busiest partition', 'writes', 'lifecycle writes per run', 'step writes per iteration', 'busiest second', 'per 1,000 concurrent (measured)', 'per 1,000 concurrent (paper)', 'binds at (runs, paper)']));
  console.log(row(['---', '---', '---', '---', '---', '---', '---', '---', '---']));
  for (const place of busiest) {
    // A partition of one run (its record, its conversation) takes that run's writes alone, whatever N is.
    const ownRun = /^(run|conv|live)#/.test(place.partition);
    const perRun = place.lifecycle / Math.max(1, mine.length);
    const perIteration = place.step / Math.max(1, iterations);
    const paper = (perRun * paperStepsPerSecond / paperIterationsPerRun + perIteration * paperStepsPerSecond) * 1_000;
    const index = place.where !== 'table';
    console.log(
      row([
        place.where,
        place.partition.replace(/#.{24,}$/, '#…'),
        place.writes,
        index ? perRun.toFixed(2) : '',
        index ? perIteration.toFixed(3) : '',
        place.peakPerSecond,
        ownRun ? '— (one run)' : ((place.peakPerSecond * 1_000) / Math.max(1, concurrency)).toFixed(0),
        index ? paper.toFixed(0) : '',
        ownRun ? 'never (one run)' : index ? Math.round((partitionWritesPerSecond / paper) * 1_000).toLocaleString('en-US') : '',
      ]),
    );
  }
  if (outcome.problems.length) {
    console.log(`\nProblems:\n${outcome.problems.map((p) => `- ${p}`).join('\n')}`);
    process.exitCode = 1;
  }
} finally {
  await local.close();
}
