/**
 * Trace figures for `npm run bench` (docs/traces.md): what tracing adds to a step (the median of
 * an inference step with its spans flushed to an in-process OTLP receiver, against the same step
 * without an endpoint), how long the OpenTelemetry SDK takes to load at the first flush, and every
 * Lambda bundle with the SDK in it (size, cold module load). Printed, never asserted. Runs alone
 * too: `tsx test/bench/traces.ts`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { esbuildOptionsOf } from '../../lib/bundling.js';
import { OtlpTracer } from '../../functions/adapters/otel/tracer.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { newRunTrace } from '../../functions/core/traces/context.js';
import { noTracer, type Tracer } from '../../functions/core/traces/types.js';
import { memoryCore, say } from '../support/agents.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { newRun } from '../support/memory.js';
import { row } from './table.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

export interface TraceFigures {
  steps: number;
  untracedMs: number[];
  /** Spans described but not sent (the part inside the step). */
  describedMs: number[];
  tracedMs: number[];
  /** Milliseconds to load the SDK and exporter in a fresh process (what the first flush pays once per cold start). */
  sdkLoadMs: number[];
  bundles: { name: string; bytes: number; loadMs: number }[];
}

/** Times `steps` inference steps on in-memory stores with each tracer, alternating, each step's spans flushed as the handler does. */
async function stepTimes(steps: number, tracers: Tracer[]): Promise<number[][]> {
  const core = await memoryCore();
  const times = tracers.map(() => [] as number[]);
  for (let i = 0; i < steps; i++) {
    for (const [index, tracer] of tracers.entries()) {
      const runId = `bench-${index}-${i}`;
      await core.runs.create({ ...newRun(runId, 'Say ok.'), trace: newRunTrace(undefined) });
      core.model.addTurn(say('ok'));
      const deps = { ...core.deps, traces: { tracer, provider: 'anthropic' } };
      const started = performance.now();
      await inferenceStep({ runId, agent: 'single', iteration: 0 }, deps);
      await tracer.flush();
      times[index]?.push(performance.now() - started);
    }
  }
  return times;
}

export async function measureTraces(steps = 300): Promise<TraceFigures> {
  const receiver = await startOtlpReceiver();
  try {
    const traced = new OtlpTracer({ url: receiver.url, protocol: 'http/protobuf', headers: {}, serviceName: 'bench', captureContent: false });
    // A warm-up: the first flush loads the SDK (measured apart below).
    const described: Tracer = { enabled: true, captureContent: false, emit() {}, flush: async () => undefined };
    await stepTimes(20, [noTracer, described, traced]);
    const [untracedMs = [], describedMs = [], tracedMs = []] = await stepTimes(steps, [noTracer, described, traced]);
    const sdkLoadMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const load = "const t = performance.now(); await Promise.all([import('@opentelemetry/api'), import('@opentelemetry/sdk-trace-base'), import('@opentelemetry/resources'), import('@opentelemetry/exporter-trace-otlp-proto')]); console.log(performance.now() - t);";
      const out = spawnSync(process.execPath, ['--input-type=module', '-e', load], { cwd: fileURLToPath(new URL('../../', import.meta.url)), encoding: 'utf8' });
      sdkLoadMs.push(Number(out.stdout.trim()));
    }
    return { steps, untracedMs, describedMs, tracedMs, sdkLoadMs, bundles: await measureBundles({ traced: true, runs: 7 }) };
  } finally {
    await receiver.close();
  }
}

/**
 * Every function's bundle as deployed, and its cold module load: the median of `runs` fresh
 * processes importing it, minus a bare node's start. With `traced`, an OTLP endpoint is set (the
 * SDK itself loads at the first flush, not here).
 */
export async function measureBundles(options: { traced: boolean; runs: number }): Promise<TraceFigures['bundles']> {
  const out = mkdtempSync(join(tmpdir(), 'stepwise-bundles-'));
  const results: TraceFigures['bundles'] = [];
  // The default (Anthropic) deployment's seven functions, then the inference entry a Bedrock
  // deployment builds in its place (lib/stepwise-stack.ts).
  for (const name of ['inference', 'tool', 'approval', 'api', 'run-requested', 'execution-ended', 'stream', 'inference-bedrock']) {
    const file = join(out, `${name}.mjs`);
    await build({ ...esbuildOptionsOf(name), outfile: file, logLevel: 'silent' });
    const env = {
      ...process.env,
      STEPWISE_TABLE: 't',
      STEPWISE_BUCKET: 'b',
      STEPWISE_ORCHESTRATOR_ARN: 'arn:aws:states:us-east-1:1:stateMachine:x',
      STEPWISE_DEAD_LETTER_URL: 'https://sqs/x',
      AWS_REGION: 'us-east-1',
      ...(options.traced ? { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' } : {}),
    };
    // The stream function's module streamifies its handler when it loads, on the runtime's global.
    const runtime = 'globalThis.awslambda = { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };';
    const times: number[] = [];
    for (let i = 0; i < options.runs; i++) {
      const started = performance.now();
      spawnSync(process.execPath, ['--input-type=module', '-e', `${runtime} await import(${JSON.stringify(file)})`], { env, stdio: 'ignore' });
      times.push(performance.now() - started);
    }
    const baseline: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore' });
      baseline.push(performance.now() - started);
    }
    results.push({ name, bytes: statSync(file).size, loadMs: median(times) - median(baseline) });
  }
  return results;
}

export function tracesReport(f: TraceFigures): string {
  const untraced = median(f.untracedMs);
  const traced = median(f.tracedMs);
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(2);
  return [
    `\n## Traces (${f.steps} inference steps each, in-memory stores, alternating)\n`,
    row(['', 'median ms per step']),
    row(['---', '---']),
    row(['no endpoint (no tracer)', untraced.toFixed(3)]),
    row(['spans described, not sent (the part inside the step)', median(f.describedMs).toFixed(3)]),
    row(['endpoint set: spans described and flushed to an in-process OTLP receiver (http/protobuf)', traced.toFixed(3)]),
    row(['describing adds', (median(f.describedMs) - untraced).toFixed(3)]),
    row(['tracing adds, the flush (one OTLP request) included (target < 1 ms)', (traced - untraced).toFixed(3)]),
    `\nThe SDK and the OTLP exporter load at a function's first flush with spans: ${median(f.sdkLoadMs).toFixed(0)} ms median of ${f.sdkLoadMs.length} fresh processes, once per cold start.\n`,
    row(['function bundle (OTel SDK inside)', 'MiB (target < 1.5 MB)', 'cold module load ms, endpoint set (target < 300)']),
    row(['---', '---', '---']),
    ...f.bundles.map((b) => row([b.name, mb(b.bytes), b.loadMs.toFixed(0)])),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(tracesReport(await measureTraces()));
