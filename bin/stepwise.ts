#!/usr/bin/env node
/**
 * `stepwise`: start and follow runs from a terminal. Talks to the API that --endpoint or
 * STEPWISE_ENDPOINT names (a deployed one SigV4-signed with the standard AWS credential chain),
 * else to the local server on PORT (default 8787), as `npm run dev` serves it. --json prints the
 * API's answers for scripts.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import type { ApiClient } from '../functions/api/client.js';
import type { RunView } from '../functions/api/schemas.js';
import type { RunSummary } from '../functions/core/runs/types.js';
import { ApiError, cliClient, isHttpUrl, localEndpoint, localToken } from './cli/client.js';
import { describeWaiting, shellWord } from './cli/describe.js';
import { scheduleCommands } from './cli/schedules.js';
import { watch } from './cli/watch.js';
import { memoriesCommand } from './cli/memories.js';

const program = new Command()
  .name('stepwise')
  .description('Start and follow Stepwise agent runs.')
  .addOption(
    new Option('--endpoint <url>', 'the Stepwise API; default: the local server, http://127.0.0.1:$PORT (PORT defaults to 8787)')
      .env('STEPWISE_ENDPOINT')
      .argParser(endpoint),
  )
  .option('--region <region>', 'AWS region for SigV4 signing (deployed APIs)', process.env.AWS_REGION)
  .addOption(new Option('--token <jwt>', 'call as the caller this token names (JWT mode, or a local token from `stepwise token`)').env('STEPWISE_TOKEN'))
  .addOption(
    new Option('--stream-endpoint <url>', "where run events stream from; deployed: the stack's StreamUrl output (a Lambda function URL); default: the --endpoint")
      .env('STEPWISE_STREAM_ENDPOINT')
      .argParser(endpoint),
  )
  .option('--json', 'print the API answers as JSON', false)
  .showHelpAfterError();

function endpoint(value: string): string {
  if (!isHttpUrl(value)) throw new InvalidArgumentError('must be an http(s) URL, such as https://abc123.execute-api.eu-west-1.amazonaws.com');
  return value;
}

/** Where every command's requests go: --endpoint, else STEPWISE_ENDPOINT, else the local server on PORT. */
function target() {
  const { endpoint, region, token } = program.opts<{ endpoint?: string; region?: string; token?: string }>();
  return { endpoint: endpoint ?? localEndpoint(), ...(region ? { region } : {}), ...(token ? { token } : {}) };
}

/** The one client of every command. */
function client(): ApiClient {
  return cliClient(target());
}

/**
 * The client that reads event streams: the stream endpoint when one is named (deployed, a Lambda
 * function URL, SigV4-signed for `lambda`), else the API's own.
 */
function streamClient(): ApiClient {
  const { streamEndpoint, region, token } = program.opts<{ streamEndpoint?: string; region?: string; token?: string }>();
  if (!streamEndpoint) return client();
  return cliClient({ endpoint: streamEndpoint, service: 'lambda', ...(region ? { region } : {}), ...(token ? { token } : {}) });
}

/** Watches a run to its end (live text as it comes, unless --json), then prints its result and files. */
async function watchToEnd(runId: string, after?: string): Promise<void> {
  const api = client();
  // The events from the stream endpoint; the run's final state from the API (a stream URL serves only the stream).
  const run = await watch({ events: streamClient().events, getRun: api.getRun }, runId, {
    ...(json() ? { out: () => undefined } : { command: commandLine() }),
    ...(after ? { after } : {}),
  });
  const files = await api.files(run.runId);
  print({ run, files: files.items }, () => summary(run, files.items));
  if (run.status !== 'succeeded') process.exitCode = 1;
}

/**
 * Another stepwise command, the way this one was run: `npm run stepwise --` when npm ran it so,
 * else the installed `stepwise`; with the --endpoint and --region given on this command line, and
 * the variable that chose the endpoint (STEPWISE_ENDPOINT, or a PORT other than 8787), since the
 * command is for another terminal, where this one's variables are not set.
 */
function commandLine(): string {
  const words = [process.env.npm_lifecycle_event === 'stepwise' ? 'npm run stepwise --' : 'stepwise'];
  const endpointFrom = program.getOptionValueSource('endpoint');
  if (endpointFrom === 'env') words.unshift(`STEPWISE_ENDPOINT=${shellWord(String(program.getOptionValue('endpoint')))}`);
  else if (endpointFrom !== 'cli' && process.env.PORT && localEndpoint() !== localEndpoint('')) words.unshift(`PORT=${shellWord(process.env.PORT)}`);
  for (const name of ['endpoint', 'region']) {
    if (program.getOptionValueSource(name) === 'cli') words.push(`--${name}`, shellWord(String(program.getOptionValue(name))));
  }
  return words.join(' ');
}

const json = () => program.opts<{ json: boolean }>().json;
const print = (value: unknown, human: () => string) => process.stdout.write(`${json() ? JSON.stringify(value, null, 2) : human()}\n`);

function toolList(value: string): string[] {
  const tools = value.split(',').map((t) => t.trim()).filter(Boolean);
  if (!tools.length) throw new InvalidArgumentError('name at least one tool');
  return tools;
}

function seqNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('must be a message seq, a whole number ≥ 0');
  return n;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number ≥ 1');
  return n;
}

program
  .command('run')
  .description('start a run: the workflow plan-and-build (Architect then Coder) unless --agent, --workflow or --mode says otherwise')
  .argument('<goal...>', 'what the agent should achieve')
  .addOption(new Option('--agent <name>', 'run this agent (`agents` lists them)').conflicts(['mode', 'workflow']))
  .addOption(new Option('--workflow <name>', 'run this workflow (`agents` lists them)').conflicts(['mode']))
  .option('--mode <mode>', 'the built-ins: single (the agent assistant) or multi (the workflow plan-and-build)')
  .option('--session <id>', "continue an agent's session (with --agent or --mode single)")
  .option('--max-iterations <n>', 'iteration limit per agent', positiveInt)
  .option('--idempotency-key <key>', 'repeat-safe key for this request')
  .option('--require-approval <tools>', 'tools whose calls wait for your approval, comma-separated (e.g. write_file,edit_file)', toolList)
  .option('--follow', 'show progress until the run ends, then the result and files', false)
  // The API judges --agent, --workflow and --mode (its refusal names the ones this deployment has).
  .action(async (goalWords: string[], opts: RunOptions) => {
    const api = client();
    const body = {
      goal: goalWords.join(' '),
      ...(opts.agent ? { agent: opts.agent } : {}),
      ...(opts.workflow ? { workflow: opts.workflow } : {}),
      ...(opts.mode ? { mode: opts.mode } : {}),
      ...(opts.session ? { sessionId: opts.session } : {}),
      ...(opts.maxIterations ? { maxIterations: opts.maxIterations } : {}),
      ...(opts.requireApproval ? { approvals: { tools: opts.requireApproval } } : {}),
    };
    const started = await api.startRun(body, opts.idempotencyKey);
    await showStarted(started, opts.follow);
  });

interface RunOptions {
  agent?: string;
  workflow?: string;
  mode?: 'single' | 'multi';
  session?: string;
  maxIterations?: number;
  idempotencyKey?: string;
  requireApproval?: string[];
  follow: boolean;
}

program
  .command('agents')
  .description("the deployment's agents and workflows, under a header: what run --agent and --workflow may name")
  .action(async () => {
    const page = await client().agents();
    print(page, () => {
      const rows = page.items.map((item) => [
        item.name,
        item.kind,
        item.version,
        item.kind === 'workflow' ? (item.steps ?? []).map((step) => (typeof step === 'string' ? step : step.parallel.join(' + '))).join(' → ') : item.tools.join(', ') || '(none)',
        oneLine(item.description, 200),
      ]);
      return table(['NAME', 'KIND', 'VERSION', 'TOOLS / STEPS', 'DESCRIPTION'], rows).join('\n');
    });
  });

program
  .command('watch')
  .description('follow a run live until it ends (resumes by itself after a dropped connection)')
  .argument('<runId>')
  .option('--after <eventId>', 'start after this event id instead of from the beginning')
  .action(async (runId: string, opts: { after?: string }) => {
    await watchToEnd(runId, opts.after);
  });

program
  .command('fork')
  .description("start a new single-mode run from a run's conversation before one of its user messages, in a copy of its workspace")
  .argument('<runId>', 'the run to fork (it is not changed)')
  .requiredOption('--from <seq>', 'the seq of a user message (see `messages`): the fork keeps the messages before it', seqNumber)
  .option('--goal <text>', 'what to send after them; default: the message at --from again ("retry from here")')
  .option('--agent <agent>', 'whose conversation, for a run of several agents: its place in the run (architect or coder in plan-and-build)')
  .option('--max-iterations <n>', 'iteration limit of the fork', positiveInt)
  .option('--idempotency-key <key>', 'repeat-safe key for this request')
  .option('--follow', 'show progress until the fork ends, then the result and files', false)
  // The API judges --agent (its refusal names the run's agents).
  .action(async (runId: string, opts: { from: number; goal?: string; agent?: string; maxIterations?: number; idempotencyKey?: string; follow: boolean }) => {
    const api = client();
    const body = {
      fromSeq: opts.from,
      ...(opts.goal !== undefined ? { goal: opts.goal } : {}),
      ...(opts.agent ? { agent: opts.agent } : {}),
      ...(opts.maxIterations ? { maxIterations: opts.maxIterations } : {}),
    };
    const started = await api.forkRun(runId, body, opts.idempotencyKey);
    await showStarted(started, opts.follow);
  });

/** Prints a run just started: its id, or with `follow` its progress, then the result and files (non-zero exit unless it succeeded). */
async function showStarted(started: { runId: string }, following: boolean): Promise<void> {
  if (!following) {
    print(started, () => started.runId);
    return;
  }
  if (!json()) process.stdout.write(`run ${started.runId}\n`);
  await watchToEnd(started.runId);
}

program
  .command('status')
  .description("a run's state")
  .argument('<runId>')
  .action(async (runId: string) => {
    const run = await client().getRun(runId);
    print(run, () => summary(run));
    if (run.status === 'failed') process.exitCode = 1;
  });

program
  .command('messages')
  .description("a run's transcript")
  .argument('<runId>')
  .option('--agent <agent>', "one agent's messages, by its place in the run: single (the assistant), architect, coder, or a defined agent's name")
  // The API judges --agent (its refusal names the agents).
  .action(async (runId: string, opts: { agent?: string }) => {
    const items: Awaited<ReturnType<ApiClient['messages']>>['items'] = [];
    let cursor: string | undefined;
    do {
      const page = await client().messages(runId, { ...(opts.agent ? { agent: opts.agent } : {}), ...(cursor ? { cursor } : {}) });
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    print({ items }, () =>
      items
        .map((m) => {
          const text = m.content
            .map((b) => (b.type === 'text' ? b.text : b.type === 'tool_use' ? `[${b.name} ${JSON.stringify(b.input)}]` : b.type === 'tool_result' ? `[result] ${String(b.content).slice(0, 300)}` : `[${b.type}]`))
            .join('\n');
          // A user message that only carries tool results is not one to fork from: it says so.
          const role = m.role === 'user' && m.content.length > 0 && m.content.every((b) => b.type === 'tool_result') ? 'tool results' : m.role;
          return `#${m.seq} ${m.agent} ${role}\n${text}`;
        })
        .join('\n\n'),
    );
  });

program
  .command('files')
  .description("the files a run's workspace holds")
  .argument('<runId>')
  .action(async (runId: string) => {
    const files = await client().files(runId);
    print(files, () => files.items.map((f) => `${f.path}\t${f.size}`).join('\n') || '(no files)');
  });

program
  .command('cat')
  .description('print one file of a run')
  .argument('<runId>')
  .argument('<path>')
  .action(async (runId: string, path: string) => {
    process.stdout.write(await (await client().file(runId, path)).text());
  });

program
  .command('cancel')
  .description('cancel a running run')
  .argument('<runId>')
  .action(async (runId: string) => {
    const answer = await client().cancelRun(runId);
    print(answer, () => `${answer.runId} ${answer.status}`);
  });

program
  .command('list')
  .description('your runs, newest first (with --tenant, every run of your tenant: reviewers and admins)')
  .addOption(new Option('--status <status>', 'only runs with this status').choices(['running', 'succeeded', 'failed', 'cancelled']))
  .option('--limit <n>', 'runs per page (1-100)', positiveInt)
  .option('--cursor <cursor>', 'the page after the one that printed this cursor')
  .option('--tenant', "every run of your tenant, not only yours", false)
  .action(async (opts: { status?: RunSummary['status']; limit?: number; cursor?: string; tenant: boolean }) => {
    const page = await client().listRuns({
      ...(opts.status ? { status: opts.status } : {}),
      ...(opts.limit ? { limit: String(opts.limit) } : {}),
      ...(opts.cursor ? { cursor: opts.cursor } : {}),
      ...(opts.tenant ? { scope: 'tenant' as const } : {}),
    });
    print(page, () => {
      if (!page.items.length) return 'no runs';
      const width = Math.max(6, ...page.items.map((r) => r.runId.length));
      const row = (cells: string[]) => cells.join('  ').trimEnd();
      const lines = [
        row(['RUN ID'.padEnd(width), 'STATUS'.padEnd(9), 'PHASE'.padEnd(9), 'CREATED'.padEnd(24), 'COST'.padEnd(7), 'GOAL']),
        ...page.items.map((r) =>
          row([r.runId.padEnd(width), r.status.padEnd(9), r.phase.padEnd(9), r.createdAt.padEnd(24), `$${r.estimatedCostUsd.toFixed(4)}`, `${r.waitingFor ? `⏸ ${r.waitingFor}  ` : ''}${oneLine(r.goal)}`]),
        ),
      ];
      if (page.nextCursor) lines.push(`more: ${commandLine()} list --cursor ${shellWord(page.nextCursor)}`);
      return lines.join('\n');
    });
  });

memoriesCommand(program, client, print);

program
  .command('eval')
  .description('run an eval suite (docs/evals.md): each case a real run, its checks judged; prints a table, writes a JSON report, exits 1 on any failure or error')
  .argument('[suite]', 'the suite, a JSON file')
  .option('--concurrency <n>', 'cases running at once', positiveInt, 4)
  .option('--compare <report>', 'an earlier report: print the regressions, and exit 1 when there are any')
  .option('--out <file>', 'where the JSON report goes (default eval-<suite>-<time>.json); with --from-runs, the suite')
  .option('--from-runs <runId...>', 'write a suite made from these runs, their answers the reference, instead of running one')
  .option('--timeout <seconds>', "how long a case's run may take before it is cancelled and the case is an error", positiveInt, 600)
  .option('--markdown', 'print the table as Markdown', false)
  .action(async (suite: string | undefined, opts: { concurrency: number; compare?: string; out?: string; fromRuns?: string[]; timeout: number; markdown: boolean }) => {
    // Loaded only for evals: the suite's schemas and checks (zod, Ajv) are no other command's cost.
    const { evalCommand } = await import('./cli/eval.js');
    process.exitCode = await evalCommand(client(), suite, { ...opts, json: json() });
  });

program
  .command('token')
  .description('a token of the local server (npm run dev) for another caller; use it with --token or STEPWISE_TOKEN')
  .requiredOption('--sub <subject>', 'who the caller is')
  .option('--tenant <tenant>', "the caller's tenant")
  .addOption(new Option('--scope <role...>', 'roles: approve (decide approvals, read the tenant\'s runs), admin (also cancel them)').choices(['approve', 'admin']))
  .action(async (opts: { sub: string; tenant?: string; scope?: ('approve' | 'admin')[] }) => {
    const answer = await localToken(target(), {
      sub: opts.sub,
      ...(opts.tenant ? { tenant: opts.tenant } : {}),
      ...(opts.scope ? { scopes: opts.scope } : {}),
    });
    print(answer, () => answer.token);
  });

/** Rows under a header, each column as wide as its widest cell, two spaces apart; the last column is not padded. */
function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) => cells.map((cell, i) => (i < cells.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell)).join('  ').trimEnd();
  return [line(header), ...rows.map(line)];
}

/** A goal on one line, cut for a listing. */
function oneLine(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

scheduleCommands(program, { client, print }, table);

for (const decision of ['approve', 'deny'] as const) {
  const command = program
    .command(decision)
    .description(`${decision} a tool call that waits for a reviewer (see waitingFor in status)`)
    .argument('<runId>')
    .argument('<toolUseId>')
    .option('--reason <text>', decision === 'deny' ? 'why, for the model to read' : 'a note kept with the decision')
    .option('--message <text>', decision === 'deny' ? 'what the model reads instead of the reason' : 'what the model reads after the tool\'s output');
  if (decision === 'approve') command.option('--input <json>', 'run the call with this input instead (a JSON object, checked against the tool\'s schema)', jsonObject);
  command.action(async (runId: string, toolUseId: string, opts: { reason?: string; message?: string; input?: Record<string, unknown> }) => {
    const answer = await client().decide(runId, toolUseId, {
      decision,
      ...(opts.reason ? { reason: opts.reason } : {}),
      ...(opts.message ? { message: opts.message } : {}),
      ...(opts.input ? { input: opts.input } : {}),
    });
    print(answer, () => `${answer.toolUseId} ${decision === 'approve' ? 'approved' : 'denied'}${answer.edited ? ' with edited input' : ''}${answer.reason ? ` (${answer.reason})` : ''}`);
  });
}

function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('must be JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError('must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** What a run follows: `agent <name>@<version>` or `workflow <name>@<version>`; the mode of a run made before agents were data. */
function follows(run: RunView): string {
  if (run.agent) return `agent ${run.agent.name}@${run.agent.version}`;
  if (run.workflow) return `workflow ${run.workflow.name}@${run.workflow.version}`;
  return run.mode;
}

function summary(run: RunView, files?: { path: string; size: number }[]): string {
  const lines = [`${run.runId} · ${follows(run)} · ${run.status} · phase ${run.phase}`];
  for (const waiting of run.waitingFor ?? []) lines.push(describeWaiting(run.runId, waiting, commandLine()).trimStart());
  if (run.forkedFrom) lines.push(`forked from ${run.forkedFrom.runId} (${run.forkedFrom.agent}) before message ${run.forkedFrom.seq}`);
  if (run.plan) lines.push(`plan: ${run.plan.steps.length} steps for "${run.plan.goal}"`);
  if (run.result) lines.push('', run.result.response);
  if (run.error) lines.push(`error: ${run.error.code}${run.error.agent ? ` (${run.error.agent})` : ''}: ${run.error.message}`);
  if (files) lines.push('', files.length ? `files: ${files.map((f) => f.path).join(', ')}` : 'files: none');
  return lines.join('\n');
}

program.parseAsync().catch((error: unknown) => {
  if (error instanceof ApiError) {
    process.stderr.write(`error: ${error.code}: ${error.detail}\n`);
  } else {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  }
  process.exitCode = 1;
});
