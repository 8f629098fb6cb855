#!/usr/bin/env node
/**
 * `npm run dev`: Stepwise on this machine. DynamoDB and S3 emulators on loopback (data under
 * STEPWISE_DATA_DIR, default .stepwise/data, kept across restarts; one process per folder), the
 * synthesized state machines in the local runtime, the HTTP API on PORT (default 8787).
 * A busy port or a data folder in use ends the start with one line of advice and exit code 1.
 * STEPWISE_APPROVAL_TOOLS (comma-separated: built-in tools, `<server>__<tool>` of a configured MCP
 * server, configured Lambda tools) and STEPWISE_APPROVAL_TIMEOUT (seconds) stand in for the
 * cdk.json approval settings.
 * STEPWISE_STREAM_MAX_SECONDS sets how long an event stream (`GET /runs/{runId}/events`,
 * `POST /agui`) stays open before it ends with the cursor to resume from (default 840).
 *
 * Without ANTHROPIC_API_KEY, runs are answered by the offline model (`local/offline/`) through a
 * local Messages API; a goal tagged `[script:<name>]` replays `local/scripts/<name>.json`.
 * `STEPWISE_PROVIDER=bedrock` calls Amazon Bedrock with the default AWS credentials; with
 * `STEPWISE_SCRIPT` as well, a local Bedrock stand-in replays the script instead, so the Bedrock
 * client (SigV4, InvokeModel) runs offline.
 *
 * STEPWISE_MCP_SERVERS and STEPWISE_LAMBDA_TOOLS configure external tools as deployed; the
 * functions of Lambda tools run from STEPWISE_LOCAL_FUNCTIONS, JSON `{ "<function name>": "<module>" }`,
 * each module's `handler` served by the local Lambda Invoke API. Their `capabilities` (and an MCP
 * server's `toolCapabilities`) are part of that JSON; STEPWISE_REVIEW_EGRESS_AFTER_UNTRUSTED=false
 * stands in for cdk.json's `stepwise:reviewEgressAfterUntrusted: false`.
 *
 * STEPWISE_AGENTS and STEPWISE_WORKFLOWS (JSON arrays, inline or `@<path>` to a file) stand in for
 * cdk.json's `stepwise:agents` and `stepwise:workflows`, checked as `cdk synth` checks them: a bad
 * definition ends the start with one line naming it and exit code 1.
 */
import '../local/sdk-warning.js';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import * as z from 'zod';
import { AgentConfigInvalid } from '../functions/core/agents/types.js';
import { messageOf } from '../functions/core/errors/errors.js';
import { configuredDefinitions } from '../functions/wiring/agents.js';
import type { StepwiseStackProps } from '../lib/stepwise-stack.js';
import { startModelStandIn } from '../local/model-stand-in.js';
import { eventLine } from '../local/event-lines.js';
import type { LocalFunctionHandler } from '../local/stand-ins/lambda-api.js';
import { startLocalStack } from '../local/stack.js';
import { DataDirInUse, dataDirInUseAdvice } from '../local/stand-ins/data-lock.js';
import { PortInUse } from '../local/stand-ins/http-server.js';
import { buildConsole, consoleIsCurrent, writeConsole } from '../console/build.js';

const port = Number(process.env.PORT ?? 8787);
const timeout = process.env.STEPWISE_APPROVAL_TIMEOUT;
if (timeout !== undefined && !/^[1-9]\d{0,6}$/.test(timeout)) {
  throw new Error(`STEPWISE_APPROVAL_TIMEOUT must be a whole number of seconds (1 to 2,147,483), not "${timeout}".`);
}
// Read before anything starts: a file that cannot be read, or is not JSON, ends the start at once.
const definitions = (() => {
  try {
    return configuredDefinitions(process.env);
  } catch (error) {
    process.stderr.write(`${messageOf(error)}\n`);
    process.exit(1);
  }
})();
const stackProps: StepwiseStackProps = {
  // The stack checks them as `cdk synth` does (adviceFor below prints what it refuses).
  ...(definitions.agents !== undefined ? { agents: definitions.agents as StepwiseStackProps['agents'] } : {}),
  ...(definitions.workflows !== undefined ? { workflows: definitions.workflows as StepwiseStackProps['workflows'] } : {}),
  ...(timeout ? { approvalTimeout: Duration.seconds(Math.min(Number(timeout), 2_147_483)) } : {}),
};
// Without a key, the offline model answers: the first run gets a real answer.
const model = await startModelStandIn(process.env);
const modules = z
  .record(z.string().min(1), z.string().min(1))
  .safeParse(JSON.parse(process.env.STEPWISE_LOCAL_FUNCTIONS ?? '{}'));
if (!modules.success) throw new Error('STEPWISE_LOCAL_FUNCTIONS must be a JSON object of function names to module paths.');
const functions: Record<string, LocalFunctionHandler> = {};
for (const [name, path] of Object.entries(modules.data)) {
  const module = (await import(pathToFileURL(resolve(path)).href)) as { handler?: unknown };
  if (typeof module.handler !== 'function') throw new Error(`STEPWISE_LOCAL_FUNCTIONS: ${path} exports no handler function.`);
  functions[name] = module.handler as LocalFunctionHandler;
}
const dataDir = resolve(process.env.STEPWISE_DATA_DIR ?? '.stepwise/data');
// The console is built when its sources are newer than dist/console: no manual build step.
if (!consoleIsCurrent()) writeConsole(buildConsole());
const stack = await startLocalStack({
  port,
  functions,
  dataDir,
  // One short line per run that ends (and per approval asked for); the execution events stay quiet.
  onEvent: (e) => {
    const line = eventLine(e);
    if (line) process.stdout.write(`${line}\n`);
  },
  stackProps,
  env: model.env,
}).catch(async (error: unknown) => {
  const advice = adviceFor(error);
  if (!advice) throw error;
  // What to do, in one line: the stack trace of a known situation helps nobody.
  process.stderr.write(`${advice}\n`);
  await model.close();
  process.exit(1);
});
process.stdout.write(`Stepwise is listening on ${stack.url} (model: ${model.model})\n`);
process.stdout.write(`The console: ${stack.url}/console/\n`);
for (const note of model.notes) process.stdout.write(`${note}\n`);
const shutdown = async () => {
  await stack.close();
  await model.close();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);

/** The one-line advice for a start that failed for a known reason. */
function adviceFor(error: unknown): string | undefined {
  if (error instanceof PortInUse) {
    return `Port ${error.port} is in use: stop the other process, or set PORT to another port.`;
  }
  if (error instanceof DataDirInUse) return dataDirInUseAdvice(error);
  // An agent or workflow definition the stack refused: the line names it and the field.
  if (error instanceof AgentConfigInvalid) return error.message;
  // A setting the wiring refused (a bad STEPWISE_AGENTS definition, say): its one line names it.
  if (error instanceof Error && error.message.startsWith('Stepwise is misconfigured: ')) return error.message;
  return undefined;
}
