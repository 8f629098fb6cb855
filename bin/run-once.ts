#!/usr/bin/env node
/**
 * Runs one single-mode agent run on the embedded stand-ins (DynamoDB and S3 emulators on
 * loopback, data under --data, else STEPWISE_DATA_DIR, else .stepwise/data, the folder `npm run dev`
 * uses) and prints its progress: the agent core without the state machine, for trying Stepwise
 * from a fresh clone. A data folder that another process holds ends it with one line and exit 1.
 *
 *   npm start -- "What is 1234 times 5678?"                       # Claude with ANTHROPIC_API_KEY, else the offline model
 *   npm start -- --script local/scripts/calculator.json "Multiply"   # a script replayed exactly
 */
import '../local/sdk-warning.js';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { modelWiring } from '../functions/wiring/model.js';
import { anthropicFrom } from '../functions/wiring/model-anthropic.js';
import { bedrockFrom } from '../functions/wiring/model-bedrock.js';
import { wire } from '../functions/wiring/wire.js';
import { runAgentLoop } from '../functions/core/steps/loop.js';
import { zeroUsage } from '../functions/core/model/messages.js';
import { DataDirInUse, dataDirInUseAdvice } from '../local/stand-ins/data-lock.js';
import { type Emulators, startEmulators } from '../local/stand-ins/emulators.js';
import { startModelStandIn } from '../local/model-stand-in.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    script: { type: 'string' },
    'max-iterations': { type: 'string', default: '20' },
    data: { type: 'string', default: process.env.STEPWISE_DATA_DIR ?? '.stepwise/data' },
  },
});
const goal = positionals.join(' ').trim();
if (!goal) {
  process.stderr.write('Usage: npm start -- [--script turns.json] [--max-iterations N] [--data folder] "<goal>"\n');
  process.exit(2);
}

let emulators: Emulators;
try {
  emulators = await startEmulators({ dataDir: resolve(values.data) });
} catch (error) {
  if (!(error instanceof DataDirInUse)) throw error;
  process.stderr.write(`${dataDirInUseAdvice(error)}\n`);
  process.exit(1);
}
// Without a key (and without --script), the offline model answers.
const model = await startModelStandIn(values.script ? { ...process.env, STEPWISE_PROVIDER: 'scripted' } : process.env);
try {
  process.stdout.write(`model: ${values.script ? `the script ${values.script}` : model.model}\n`);
  const env = {
    ...process.env,
    ...model.env,
    STEPWISE_TABLE: emulators.table,
    STEPWISE_BUCKET: emulators.bucket,
    STEPWISE_DYNAMODB_ENDPOINT: emulators.dynamoEndpoint,
    STEPWISE_S3_ENDPOINT: emulators.s3Endpoint,
    ...(values.script ? { STEPWISE_PROVIDER: 'scripted', STEPWISE_SCRIPT: resolve(values.script) } : {}),
  };
  // On this machine every provider is at hand; only the Lambda bundles carry one each.
  const wiring = wire(env, { model: modelWiring({ anthropic: anthropicFrom, bedrock: bedrockFrom }) });
  const runId = randomUUID();
  const now = new Date().toISOString();
  await wiring.runs.create({
    runId,
    mode: 'single',
    goal,
    status: 'running',
    phase: 'executing',
    currentAgent: 'single',
    iterations: {},
    usage: zeroUsage,
    createdAt: now,
    updatedAt: now,
  });
  process.stdout.write(`run ${runId}\n`);
  try {
    const outcome = await runAgentLoop(
      {
        runId,
        agent: 'single',
        maxIterations: Number(values['max-iterations']),
        onStep: (step) => {
          const calls = step.toolCalls.map((c) => c.name).join(', ');
          process.stdout.write(`  step ${step.iteration + 1}: ${step.stopReason}${calls ? ` → ${calls}` : ''}\n`);
        },
      },
      wiring,
    );
    await wiring.runs.finish(runId, { status: 'succeeded', phase: 'complete', result: { response: outcome.response, actionsTaken: [] } });
    const files = await wiring.workspaceFor(runId).list('', 100);
    const run = await wiring.runs.get(runId);
    process.stdout.write(`\n${outcome.response}\n\n`);
    if (files.entries.length) process.stdout.write(`files: ${files.entries.map((f) => f.path).join(', ')}\n`);
    process.stdout.write(`tokens: ${run?.usage.inputTokens ?? 0} in, ${run?.usage.outputTokens ?? 0} out\n`);
  } catch (error) {
    const name = error instanceof Error ? error.name : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    await wiring.runs.finish(runId, { status: 'failed', phase: 'failed', error: { code: name, message, agent: 'single' } });
    process.stderr.write(`run failed: ${name}: ${message}\n`);
    process.exitCode = 1;
  }
} finally {
  await emulators.stop();
  await model.close();
}
