/**
 * `npm run bench`: Stepwise's own overhead, measured through the local runtime with a scripted
 * model that answers at once, so what is left is the loop around the model. Prints a table.
 * Not part of the test run: numbers vary with the machine; targets are read, not asserted.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toWire } from '../../functions/adapters/model/anthropic.js';
import { ScriptedModel, type ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import { pricesOf } from '../../functions/core/model/prices.js';
import type { RequestCounts } from '../../local/stand-ins/emulators.js';
import { startLocalStack } from '../../local/stack.js';
import { wire } from '../../functions/wiring/wire.js';
import { memoryCore } from '../support/agents.js';
import { callersReport, measureCallers } from './callers.js';
import { checksReport, measureChecks } from './checks.js';
import { consoleReport, measureConsole } from './console.js';
import { contextEditingReport } from './context-editing.js';
import { memoryReport } from './memory.js';
import { IterationProfile, inferenceStarts, phasesOf, requestKinds } from './iteration.js';
import { requestsReport } from './requests.js';
import { measureStartup, startupReport } from './startup.js';
import { measureBundles, measureTraces, tracesReport } from './traces.js';
import { row } from './table.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const prices = JSON.parse(readFileSync(new URL('./prices.json', import.meta.url), 'utf8')) as Prices;

interface Prices {
  stepFunctionsPerTransition: number;
  lambdaPerRequest: number;
  lambdaPerGbSecondArm: number;
  dynamoPerWriteRequest: number;
  dynamoPerReadRequest: number;
  s3PerPut: number;
  s3PerGet: number;
}

const benchModel = 'claude-sonnet-4-5';
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)] ?? 0;

/**
 * A script of `n` tool turns (a small file read each time) and a final answer. Each turn states its
 * usage, as a model's answer does: the scripted model would otherwise estimate it from the whole
 * request it was sent (a stringify of the growing conversation, half a millisecond a turn on
 * average over 200 turns), which is the stand-in's work, not Stepwise's.
 */
function script(n: number): ScriptedTurn[] {
  const usage = (turn: number) => ({ inputTokens: 1_200 + 650 * turn, outputTokens: 40 });
  const turns: ScriptedTurn[] = [{ content: [{ type: 'tool_use', id: 'toolu_w', name: 'write_file', input: { path: 'data.txt', content: 'x'.repeat(2_000) } }], usage: usage(0) }];
  for (let i = 1; i < n; i++) turns.push({ content: [{ type: 'tool_use', id: `toolu_${i}`, name: 'read_file', input: { path: 'data.txt' } }], usage: usage(i) });
  turns.push({ content: [{ type: 'text', text: 'done' }], usage: usage(n) });
  return turns;
}

/** Per-iteration figures of one run on the stack. */
interface RunFigures {
  status: string;
  iterations: number;
  gaps: number[];
  transitions: number;
  invocations: number;
  stats: RequestCounts;
}

/** A team's agent for the bench: the built-in assistant's tools, its own instructions. */
const benchAgent = {
  name: 'bench-agent',
  description: 'Reads and writes files for the bench.',
  instructions: 'You are the bench agent. Read the file you are asked to read, and answer when done.',
  tools: ['calculator', 'read_file', 'write_file', 'list_files', 'edit_file'],
};

const growthLengths = [10, 100, 1000];
const growthIterations = 6;

async function measure(iterations: number) {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-bench-'));
  const scriptFile = join(dir, 'script.json');
  // Every run replays the script from its first turn: the long run to its end, the growth runs
  // for their first iterations, where their limit stops them.
  writeFileSync(scriptFile, JSON.stringify(script(iterations - 1)));
  const profile = new IterationProfile({
    dynamo: () => process.env.STEPWISE_DYNAMODB_ENDPOINT,
    s3: () => process.env.STEPWISE_S3_ENDPOINT,
  });
  const stack = await startLocalStack({
    port: 0,
    env: { STEPWISE_PROVIDER: 'scripted', STEPWISE_SCRIPT: scriptFile, STEPWISE_MODEL: 'claude-bench', STEPWISE_AGENTS: JSON.stringify([benchAgent]) },
    wrapHandler: profile.wrapHandler,
    aroundApi: profile.aroundApi,
  });
  const runOnce = async (body: Record<string, unknown>): Promise<RunFigures> => {
    profile.reset();
    stack.requestCounter.reset();
    const before = new Set(stack.runtime.list().map((e) => e.executionArn));
    const res = await fetch(`${stack.url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const { runId } = (await res.json()) as { runId: string };
    await stack.runtime.idle();
    const run = (await (await fetch(`${stack.url}/runs/${runId}`)).json()) as { status: string };
    const executions = stack.runtime.list().filter((e) => !before.has(e.executionArn));
    const starts = inferenceStarts(profile);
    return {
      status: run.status,
      iterations: starts.length,
      gaps: starts.slice(1).map((t, i) => t - (starts[i] ?? t)),
      transitions: executions.reduce((n, e) => n + e.transitions, 0),
      invocations: profile.invocations.length,
      stats: await stack.requestCounter.snapshot(),
    };
  };
  try {
    // A warm-up run first, as a warm Lambda container has served steps before (the JIT compiles
    // the hot paths over the first hundreds of iterations; cold start is measured on its own, below).
    // The wall times come from runs without the measuring (see IterationProfile.wrapHandler); the
    // phases and requests from the same run again, measured.
    await runOnce({ goal: 'bench', mode: 'single', maxIterations: 200 });
    const main = await runOnce({ goal: 'bench', mode: 'single', maxIterations: 200 });
    const { conversations } = wire(process.env);
    const growth: (RunFigures & { history: number })[] = [];
    for (const history of growthLengths) {
      const sessionId = `bench-${history}`;
      for (let seq = 0; seq < history; seq++) {
        const role = seq % 2 === 0 ? 'user' : 'assistant';
        await conversations.append(`session/${sessionId}`, { seq, role, content: [{ type: 'text', text: `${role} turn ${seq}: ${'lorem ipsum '.repeat(15)}` }], meta: { runId: 'seed', iteration: seq } });
      }
      growth.push({ history, ...(await runOnce({ goal: 'bench', mode: 'single', sessionId, maxIterations: growthIterations })) });
    }
    // A team's agent with the assistant's tools: what following a stored definition costs per step.
    await runOnce({ goal: 'bench', agent: benchAgent.name, maxIterations: 200 });
    const custom = await runOnce({ goal: 'bench', agent: benchAgent.name, maxIterations: 200 });
    const again = await runOnce({ goal: 'bench', mode: 'single', maxIterations: 200 });
    profile.attach(ScriptedModel.prototype);
    const measured = await runOnce({ goal: 'bench', mode: 'single', maxIterations: 200 });
    return { main, measured: { ...measured, phases: phasesOf(profile), requests: requestKinds(profile) }, growth, custom, again };
  } finally {
    await stack.close();
    profile.close();
  }
}

async function cacheShare(steps: number) {
  const core = await memoryCore('Read the file again and again.');
  const model = core.model as ScriptedModel;
  for (const turn of script(steps - 1)) model.addTurn(turn);
  await runAgentLoop({ runId: 'run-1', agent: 'single', maxIterations: steps + 1 }, core.deps);
  // What the cache keys on: tools, system and each message, in order, without the breakpoints
  // themselves. A request reuses the previous one's prefix up to its last breakpoint (the end
  // of its last message) when those parts are byte-identical.
  const strip = (value: unknown) => JSON.stringify(value, (key, v: unknown) => (key === 'cache_control' ? undefined : v));
  const partsOf = (request: (typeof model.requests)[number]) => {
    const wire = toWire(request) as unknown as { tools?: unknown; system: unknown; messages: unknown[] };
    return [strip(wire.tools ?? []), strip(wire.system), ...wire.messages.map(strip)];
  };
  const bodies = model.requests.map(partsOf);
  const shares: number[] = [];
  // Input tokens (4 characters a token) read from the cache, written to it, and in all.
  const tokens = { read: 0, written: 0, total: 0 };
  for (let i = 0; i < bodies.length; i++) {
    const body = bodies[i] ?? [];
    const previous = i > 0 ? (bodies[i - 1] ?? []) : [];
    let shared = 0;
    for (let k = 0; k < previous.length && previous[k] === body[k]; k++) shared += previous[k]?.length ?? 0;
    const total = body.reduce((n, part) => n + part.length, 0);
    if (i > 0) shares.push(shared / total);
    tokens.read += shared / 4;
    tokens.written += (total - shared) / 4;
    tokens.total += total / 4;
  }
  return { shares, requests: model.requests.length, tokens };
}


// `npm run bench -- [iterations] [--loop]`: `--loop` prints only the agent-loop measures (about a
// minute), for trying a change to the loop; without it, everything.
const args = process.argv.slice(2);
const loopOnly = args.includes('--loop');
const iterations = Number(args.find((arg) => !arg.startsWith('--')) ?? 200);
// `npm run bench -- --load [N]`: the load simulation alone (test/bench/load.ts, N = 500 by default), in
// a process of its own: the handlers' modules keep the first stack's endpoints for good.
if (args.includes('--load')) {
  const runs = args.find((arg) => /^\d+$/.test(arg)) ?? '500';
  execFileSync(process.execPath, [createRequire(import.meta.url).resolve('tsx/cli'), fileURLToPath(new URL('./load.ts', import.meta.url)), runs], { stdio: 'inherit' });
  process.exit(0);
}
console.log(`Stepwise bench (${new Date().toISOString()}, node ${process.version}, ${execFileSync('nproc').toString().trim()} cores)\n`);

const { main: loop, measured, growth, custom, again } = await measure(iterations);
const perIteration = (n: number, figures: RunFigures = loop) => (n / Math.max(1, figures.iterations)).toFixed(2);
console.log(`## Agent loop, ${loop.iterations} iterations (run ${loop.status}; after a warm-up run of the same script)\n`);
console.log(row(['measure', 'median', 'p95', 'per iteration']));
console.log(row(['---', '---', '---', '---']));
console.log(row(['wall ms between inference steps', median(loop.gaps).toFixed(1), p95(loop.gaps).toFixed(1), '']));
console.log(row(['state transitions', '', '', perIteration(loop.transitions)]));
console.log(row(['Lambda invocations', '', '', perIteration(loop.invocations)]));
for (const [op, n] of Object.entries(loop.stats.dynamo)) console.log(row([`DynamoDB ${op}`, '', '', perIteration(n)]));
console.log(row(['DynamoDB bytes read (responses)', '', '', perIteration(loop.stats.dynamoBytesOut)]));
console.log(row(['DynamoDB bytes written (requests)', '', '', perIteration(loop.stats.dynamoBytesIn)]));
for (const [op, n] of Object.entries(loop.stats.s3)) console.log(row([`S3 ${op}`, '', '', perIteration(n)]));

const { phases } = measured;
console.log(`\n## Where the time of an iteration goes (mean of ${phases.iterations} iterations, the same run again, measured)\n`);
console.log(row(['phase', 'ms per iteration (mean)', 'share']));
console.log(row(['---', '---', '---']));
for (const { phase, ms } of phases.phases) console.log(row([phase, ms.toFixed(2), `${((ms / phases.wallMs) * 100).toFixed(0)}%`]));
console.log(row(['sum: mean wall ms between inference steps', phases.wallMs.toFixed(2), '100%']));
console.log(
  `\nThe phases add up to the mean wall time between inference steps of the measured run (${phases.wallMs.toFixed(1)} ms; median ${median(measured.gaps).toFixed(1)} ms, ` +
    `where the run above, unmeasured, took ${mean(loop.gaps).toFixed(1)} ms mean and ${median(loop.gaps).toFixed(1)} ms median): ` +
    'handler calls, requests and model calls are timed, the interpreter is what is left between them. ' +
    `There the event loop was busy ${(phases.busyBetween * 100).toFixed(0)}% of the time (computing, not waiting). ` +
    `Garbage collection paused the process ${phases.gcMs.toFixed(2)} ms per iteration, inside the phases above.`,
);

console.log(`\n## Every DynamoDB and S3 request of the run, and why (client-side ms and bytes)\n`);
console.log(requestsReport(measured.requests, measured.iterations));

console.log(`\n## Growth with history (${growthIterations} iterations on a session that already holds N messages)\n`);
console.log(row(['messages before', 'median ms / iteration', 'DynamoDB requests / iteration', 'DynamoDB KiB read / iteration', 'S3 requests / iteration']));
console.log(row(['---', '---', '---', '---', '---']));
for (const g of growth) {
  const requests = Object.values(g.stats.dynamo).reduce((a, b) => a + b, 0);
  const s3Requests = Object.values(g.stats.s3).reduce((a, b) => a + b, 0);
  console.log(row([g.history, median(g.gaps).toFixed(1), perIteration(requests, g), (g.stats.dynamoBytesOut / 1024 / Math.max(1, g.iterations)).toFixed(1), perIteration(s3Requests, g)]));
}

const dynamoReads = (loop.stats.dynamo.GetItem ?? 0) + (loop.stats.dynamo.Query ?? 0);
const dynamoWrites = (loop.stats.dynamo.PutItem ?? 0) + (loop.stats.dynamo.UpdateItem ?? 0);
const per1000 = 1000 / Math.max(1, loop.iterations);
const gbSeconds = (median(loop.gaps) / 1000) * 0.5 * loop.invocations;
const s3Gets = (loop.stats.s3.GetObject ?? 0) + (loop.stats.s3.HeadObject ?? 0);
const s3Puts = Object.values(loop.stats.s3).reduce((a, b) => a + b, 0) - s3Gets;
const cost = {
  transitions: loop.transitions * per1000 * prices.stepFunctionsPerTransition,
  lambda: loop.invocations * per1000 * prices.lambdaPerRequest + gbSeconds * per1000 * prices.lambdaPerGbSecondArm,
  dynamo: dynamoReads * per1000 * prices.dynamoPerReadRequest + dynamoWrites * per1000 * prices.dynamoPerWriteRequest,
  s3: s3Gets * per1000 * prices.s3PerGet + s3Puts * per1000 * prices.s3PerPut,
};
console.log(`\n## AWS cost per 1,000 iterations, model excluded (prices: test/bench/prices.json)\n`);
console.log(row(['', 'transitions / iteration', 'Step Functions', 'Lambda', 'DynamoDB', 'S3', 'total']));
console.log(row(['---', '---', '---', '---', '---', '---', '---']));
const total = cost.transitions + cost.lambda + cost.dynamo + cost.s3;
// The figures of the seven-state loop (before the step checked its own bounds and one call ran
// without a Map), kept to compare with; Lambda, DynamoDB and S3 were not recorded apart.
console.log(row(['before (seven-state loop)', '7.08', '$0.1769', '—', '—', '—', '$0.1807']));
const dollars = (usd: number) => `$${usd.toFixed(4)}`;
console.log(row(['measured', perIteration(loop.transitions), dollars(cost.transitions), dollars(cost.lambda), dollars(cost.dynamo), dollars(cost.s3), dollars(total)]));

console.log(`\n## A team's agent against the built-in assistant (${custom.iterations} iterations each; the assistant measured before and after)\n`);
console.log(row(['run', 'median ms between inference steps', 'p95', 'transitions / iteration', 'DynamoDB GetItem / iteration', 'DynamoDB requests / iteration']));
console.log(row(['---', '---', '---', '---', '---', '---']));
const dynamoAll = (figures: RunFigures) => Object.values(figures.stats.dynamo).reduce((a, b) => a + b, 0);
for (const [name, figures] of [['assistant (mode single)', loop], [`${benchAgent.name} (agent)`, custom], ['assistant, again', again]] as const) {
  console.log(row([name, median(figures.gaps).toFixed(1), p95(figures.gaps).toFixed(1), perIteration(figures.transitions, figures), perIteration(figures.stats.dynamo.GetItem ?? 0, figures), perIteration(dynamoAll(figures), figures)]));
}
const assistantMedian = (median(loop.gaps) + median(again.gaps)) / 2;
console.log(`\nA team's agent per iteration: ${(((median(custom.gaps) - assistantMedian) / assistantMedian) * 100).toFixed(1)}% against the assistant's mean of its two medians (target: within ±10%).`);
// In a process of its own: the handlers' modules keep the first stack's endpoints for good.
execFileSync(process.execPath, [createRequire(import.meta.url).resolve('tsx/cli'), fileURLToPath(new URL('./agents.ts', import.meta.url))], { stdio: ['ignore', 'inherit', 'ignore'] });

if (loopOnly) process.exit(0);

const cache = await cacheShare(30);
console.log(`\n## Prompt cache over ${cache.requests} requests\n`);
console.log(row(['share of each request byte-identical to the previous cached prefix', 'median', 'min']));
console.log(row(['---', '---', '---']));
console.log(row(['', `${(median(cache.shares) * 100).toFixed(1)}%`, `${(Math.min(...cache.shares) * 100).toFixed(1)}%`]));
const sonnet = pricesOf(benchModel);
if (sonnet) {
  const withCache = (cache.tokens.read * sonnet.cacheReadPerMTok + cache.tokens.written * sonnet.cacheWritePerMTok) / 1e6;
  const without = (cache.tokens.total * sonnet.inputPerMTok) / 1e6;
  console.log(`\nInput tokens of those ${cache.requests} requests at ${benchModel} list prices (functions/core/model/prices.ts):\n`);
  console.log(row(['input tokens', 'cost with caching', 'cost without', 'saved']));
  console.log(row(['---', '---', '---', '---']));
  console.log(row([Math.round(cache.tokens.total), `$${withCache.toFixed(4)}`, `$${without.toFixed(4)}`, `${((1 - withCache / without) * 100).toFixed(0)}%`]));
}

console.log(await contextEditingReport());
console.log(`\n${await memoryReport()}`);

console.log('\n## Lambda bundles\n');
console.log(row(['function', 'bundle', 'cold module load (median of 10, minus bare node)']));
console.log(row(['---', '---', '---']));
for (const b of await measureBundles({ traced: false, runs: 10 })) {
  const name = b.name === 'inference-bedrock' ? 'inference (Bedrock deployment)' : b.name;
  console.log(row([name, `${(b.bytes / 1024).toFixed(0)} KiB`, `${b.loadMs.toFixed(0)} ms`]));
}

console.log(callersReport(await measureCallers()));

console.log(checksReport(measureChecks()));

console.log(startupReport(await measureStartup()));

console.log(tracesReport(await measureTraces()));

// In a process of its own: after the agent-loop measures above, the stream's fixture in this
// process never saw its approval wait (an interaction of the fixtures not yet understood).
execFileSync(process.execPath, [createRequire(import.meta.url).resolve('tsx/cli'), fileURLToPath(new URL('./stream.ts', import.meta.url))], { stdio: ['ignore', 'inherit', 'ignore'] });
// A2A over the run routes (docs/a2a.md), in a process and on a stack of its own.
execFileSync(process.execPath, [createRequire(import.meta.url).resolve('tsx/cli'), fileURLToPath(new URL('./a2a.ts', import.meta.url))], { stdio: ['ignore', 'inherit', 'ignore'] });
console.log(consoleReport(await measureConsole()));
// In a process of its own, as the CLI runs it against a server of its own: 50 eval cases at concurrency 10.
execFileSync(process.execPath, [createRequire(import.meta.url).resolve('tsx/cli'), fileURLToPath(new URL('./evals.ts', import.meta.url))], { stdio: ['ignore', 'inherit', 'ignore'] });

// In a process of its own, as the stream's: its stack's scheduler runs on a clock set ahead of the wall clock.
execFileSync(process.execPath, [createRequire(import.meta.url).resolve('tsx/cli'), fileURLToPath(new URL('./schedules.ts', import.meta.url))], { stdio: ['ignore', 'inherit', 'ignore'] });

// The MCP server's round trips against the HTTP routes, on a fixture of its own (test/bench/mcp.ts).
execFileSync(process.execPath, [createRequire(import.meta.url).resolve('tsx/cli'), fileURLToPath(new URL('./mcp.ts', import.meta.url))], { stdio: ['ignore', 'inherit', 'ignore'] });
