import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { streamRoutesOf } from '../../functions/api/stream-routes.js';
import { builtinAgents, builtinWorkflows, versionOf } from '../../functions/core/definitions/definition.js';
import type { EvalReport } from '../../functions/core/evals/types.js';
import { cliClient } from '../../bin/cli/client.js';
import { evalCommand, nodeIo } from '../../bin/cli/eval.js';
import { startLoopbackServer } from '../../local/stand-ins/http-server.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

/** An agent of this deployment's own (docs/agents.md), besides the built-ins. */
const greeter = {
  name: 'greeter',
  description: 'Greets people by name and keeps the greeting in greeting.md.',
  instructions: 'You greet people warmly, by name.',
  tools: ['write_file'],
};

const local = useLocalStack({ STEPWISE_AGENTS: JSON.stringify([greeter]) });

// The bundle the command runs, as `npm ci` builds it (through `prepare`), from the sources as they are now.
beforeAll(() => {
  execFileSync('npm', ['run', '--silent', 'build:cli'], { stdio: 'ignore' });
});

type Ran = { code: number | null; stdout: string; stderr: string };

/**
 * Starts the stepwise CLI as a person would (the installed command, or through npm as the README
 * shows), with these variables set and none of the caller's STEPWISE_ENDPOINT, PORT or npm
 * variables; its output so far is readable while it runs.
 */
function spawnCli(args: string[], env: Record<string, string> = {}, via: 'stepwise' | 'npm' = 'stepwise') {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(STEPWISE_ENDPOINT|PORT|npm_.*)$/.test(name)));
  const [command, ...commandArgs] = via === 'npm' ? ['npm', 'run', 'stepwise', '--', ...args] : [process.execPath, 'bin/stepwise.mjs', ...args];
  const child = spawn(command ?? '', commandArgs, {
    env: { ...inherited, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...env },
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const done = new Promise<Ran>((resolve) =>
    child.on('close', (code) => resolve({ code, ...out })),
  );
  return { out, done };
}

/** Starts the stepwise CLI against the local server. */
function cliLive(...args: string[]) {
  return spawnCli(['--endpoint', local.stack.url, ...args]);
}

/** Runs the stepwise CLI against the local server to the end. */
function cli(...args: string[]): Promise<Ran> {
  return cliLive(...args).done;
}

/** Runs the stepwise CLI to the end with these variables and no --endpoint of its own. */
function cliWith(env: Record<string, string>, ...args: string[]): Promise<Ran> {
  return spawnCli(args, env).done;
}

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What a followed run printed between its id and its final status line. */
function progressOf(stdout: string): string[] {
  const lines = stdout.split('\n');
  return lines.slice(1, lines.findIndex((line) => /^(succeeded|failed|cancelled) · /.test(line)));
}

/** The progress of the scripted multi-agent run below, in the order things happen. */
const multiProgress = [
  'phase planning · architect',
  '  → architect: finish_plan (1 steps)',
  '  plan: 1 steps',
  'phase executing · coder',
  '  → coder: write_file notes.md',
  '  coder: Wrote notes.md.',
  'phase complete',
];

const plan = { goal: 'Notes', steps: [{ description: 'Write notes.md', action: 'create_file', parameters: { path: 'notes.md' } }] };

describe('the stepwise CLI', () => {
  it('lists and deletes the caller\'s memory files', async () => {
    const tag = local.book.add('cli-memory', { turn: use(['toolu_m', 'memory', { command: 'create', path: '/memories/cli.md', file_text: 'hello' }]) }, { turn: say('Saved.') });
    const started = await local.request('POST', '/runs', { body: { goal: `${tag} Remember.`, mode: 'single', memory: { scope: 'owner' } } });
    expect((await local.waitFor(String(started.body.runId))).status).toBe('succeeded');
    const listed = await cli('memories', 'list');
    expect([listed.code, listed.stdout]).toEqual([0, expect.stringMatching(/^\/memories\/cli\.md\t5\t\d{4}-\d\d-\d\dT/)]);
    const deleted = await cli('memories', 'delete', 'cli.md');
    expect([deleted.code, deleted.stdout]).toEqual([0, 'deleted cli.md\n']);
    expect((await local.request('GET', '/memories')).body).toEqual({ items: [] });
  });

  it('follows a multi-agent run through its phases and tool calls, then shows the result and files', async () => {
    const tag = local.book.add(
      'cli-multi',
      { turn: use(['toolu_p', 'finish_plan', plan]), delayMs: 1_200 },
      { turn: use(['toolu_w', 'write_file', { path: 'notes.md', content: '# Notes\n' }]), delayMs: 1_200 },
      { turn: say('Wrote notes.md.'), delayMs: 300 },
    );
    const { code, stdout, stderr } = await cli('run', `${tag} Write notes.`, '--follow');

    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(progressOf(stdout)).toEqual(multiProgress);
    expect(stdout).toMatch(/succeeded · iterations: architect 1, coder 2 · tokens: \d+ in, \d+ out/);
    expect(stdout).toContain('Wrote notes.md.');
    expect(stdout).toContain('files: notes.md');
  }, 60_000);

  it('lists the agents and workflows under a header, and runs the agent --agent names, showing it and its version', async () => {
    const listed = await cli('agents');
    expect([listed.code, listed.stderr]).toEqual([0, '']);
    const [heading, ...rows] = listed.stdout.split('\n').filter(Boolean);
    expect(heading).toMatch(/^NAME +KIND +VERSION +TOOLS \/ STEPS +DESCRIPTION$/);
    const cells = (row: string | undefined) => (row ?? '').split(/ {2,}/);
    const version = versionOf(greeter);
    const planAndBuild = builtinWorkflows[0];
    expect(rows.map(cells)).toEqual([
      ...builtinAgents.map((agent) => [agent.name, 'agent', versionOf(agent), agent.tools.join(', '), agent.description]),
      ['greeter', 'agent', version, 'write_file', greeter.description],
      ['plan-and-build', 'workflow', planAndBuild && versionOf(planAndBuild), 'architect → coder', planAndBuild?.description],
    ]);
    // Each column starts where its heading does.
    const row = rows[3] ?? '';
    for (const [title, cell] of [['KIND', 'agent'], ['VERSION', version], ['TOOLS', 'write_file'], ['DESCRIPTION', greeter.description]]) {
      expect(row.indexOf(`  ${cell}`) + 2).toBe(heading?.indexOf(title ?? ''));
    }

    const tag = local.book.add('cli-agent', { turn: use(['toolu_g', 'write_file', { path: 'greeting.md', content: 'Hello, Ada!' }]) }, { turn: say('Greeted Ada.') });
    const { code, stdout, stderr } = await cli('run', '--agent', 'greeter', `${tag} Greet Ada.`, '--follow');
    expect([code, stderr]).toEqual([0, '']);
    expect(progressOf(stdout)).toEqual(['phase executing · greeter', '  → greeter: write_file greeting.md', '  greeter: Greeted Ada.', 'phase complete']);
    const runId = /^run (\S+)$/m.exec(stdout)?.[1] ?? '';
    expect(stdout).toContain(`${runId} · agent greeter@${version} · succeeded · phase complete`);
    // The model was sent the greeter's instructions and offered its tools only.
    const [first] = local.book.requests.get('cli-agent') ?? [];
    expect(JSON.stringify(first?.system)).toContain('You greet people warmly, by name.');
    expect((first?.tools as { name: string }[] | undefined)?.map((tool) => tool.name)).toEqual(['write_file']);
    expect((await cli('status', runId)).stdout.split('\n')[0]).toBe(`${runId} · agent greeter@${version} · succeeded · phase complete`);
  }, 60_000);

  it('runs the workflow --workflow names, and refuses an agent the deployment does not have or two things to run', async () => {
    const tag = local.book.add(
      'cli-workflow',
      { turn: use(['toolu_p', 'finish_plan', plan]) },
      { turn: use(['toolu_w', 'write_file', { path: 'notes.md', content: '# Notes\n' }]) },
      { turn: say('Wrote notes.md.') },
    );
    const { code, stdout } = await cli('run', '--workflow', 'plan-and-build', `${tag} Write notes.`, '--follow');
    expect(code).toBe(0);
    expect(progressOf(stdout)).toEqual(multiProgress);
    const planAndBuild = builtinWorkflows[0];
    expect(stdout).toMatch(new RegExp(` · workflow plan-and-build@${planAndBuild && versionOf(planAndBuild)} · succeeded · phase complete\n`));

    // The names a request may run (whether plan-and-build's Architect and Coder are among them is intake's rule).
    expect(await cli('run', '--agent', 'nobody', 'Hello.')).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^error: ValidationFailed: The body is invalid\. \(agent: unknown agent "nobody"; this deployment has assistant(, architect, coder)?, greeter\)\n$/),
    });
    const both = await cli('run', '--agent', 'greeter', '--mode', 'single', 'Hello.');
    expect([both.code, both.stderr]).toEqual([1, expect.stringContaining("option '--agent <name>' cannot be used with option '--mode <mode>'")]);
  }, 60_000);

  it('prints a multi-agent run in the order it happened when one poll finds it further on than the last', async () => {
    // No model delays: the Architect and the Coder finish between two polls, so the record shows
    // a later phase than the messages not printed yet.
    const tag = local.book.add(
      'cli-multi-fast',
      { turn: use(['toolu_p', 'finish_plan', plan]) },
      { turn: use(['toolu_w', 'write_file', { path: 'notes.md', content: '# Notes\n' }]) },
      { turn: say('Wrote notes.md.') },
    );
    const { code, stdout } = await cli('run', `${tag} Write notes.`, '--follow');
    expect(code).toBe(0);
    expect(progressOf(stdout)).toEqual(multiProgress);
  }, 60_000);

  it('exits non-zero on a failing run and prints the error in one line', async () => {
    const tag = local.book.add('cli-fail', { turn: say('no plan') });
    const { code, stdout } = await cli('run', `${tag} Fail.`, '--follow');
    expect(code).toBe(1);
    expect(stdout).toContain('error: NoPlanProduced (architect): The Architect finished without submitting a valid plan');
  }, 60_000);

  it('shows API errors as one clear line with a non-zero exit', async () => {
    const missing = await cli('status', 'no-such-run');
    expect([missing.code, missing.stderr]).toEqual([1, 'error: RunNotFound: No run no-such-run.\n']);
    const invalid = await cli('run', ' ', '--mode', 'swarm');
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^error: ValidationFailed: The body is invalid. \(goal: must not be empty; mode: /);
  }, 60_000);

  it('approves with an edited input and a message, and refuses input that is not a JSON object', async () => {
    const tag = local.book.add('cli-edit', { turn: use(['toolu_e', 'write_file', { path: 'draft.md', content: 'draft' }]) }, { turn: say('Done.') });
    const started = await local.post('/runs', { goal: `${tag} Write.`, mode: 'single', approvals: { tools: ['write_file'] } });
    const runId = String(started.body.runId);
    await until(() => local.stack.runtime.waitingTokens().some((t) => t.executionArn.includes(runId)), 'the approval wait');
    const bad = await cli('approve', runId, 'toolu_e', '--input', '[1]');
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringContaining("option '--input <json>' argument '[1]' is invalid. must be a JSON object")]);
    const edited = await cli('approve', runId, 'toolu_e', '--input', '{"path":"final.md","content":"final"}', '--message', 'Use final.md.');
    expect(edited).toEqual({ code: 0, stdout: 'toolu_e approved with edited input\n', stderr: '' });
    expect((await local.waitFor(runId)).status).toBe('succeeded');
    expect((await local.get(`/runs/${runId}/files`)).body.items).toEqual([{ path: 'final.md', size: 5 }]);
  }, 60_000);

  it('shows calls waiting for approval while following, and decides them with approve and deny', async () => {
    const tag = local.book.add(
      'cli-approval',
      {
        turn: use(
          ['toolu_keep', 'write_file', { path: 'keep.md', content: 'keep' }],
          ['toolu_drop', 'write_file', { path: 'drop.md', content: 'drop' }],
        ),
      },
      { turn: say('Kept one file.') },
    );
    const following = cliLive('run', `${tag} Write two files.`, '--mode', 'single', '--require-approval', 'write_file', '--follow');
    await until(() => (following.out.stdout.match(/⏸/g) ?? []).length === 2, 'two calls waiting for approval');
    const runId = /^run (\S+)$/m.exec(following.out.stdout)?.[1] ?? '';
    const approve = (id: string) => `stepwise --endpoint ${local.stack.url} approve ${runId} ${id}`;
    expect(following.out.stdout).toContain(`  ⏸ write_file keep.md awaits approval: ${approve('toolu_keep')} (or deny, with --reason "…")\n`);
    expect(following.out.stdout).toContain(`  ⏸ write_file drop.md awaits approval: ${approve('toolu_drop')} (or deny, with --reason "…")\n`);
    expect((await cli('status', runId)).stdout).toContain(`⏸ write_file keep.md awaits approval: ${approve('toolu_keep')}`);
    // The command is for another terminal: the port or endpoint this one came from goes with it.
    const { port } = new URL(local.stack.url);
    expect((await cliWith({ PORT: port }, 'status', runId)).stdout).toContain(`awaits approval: PORT=${port} stepwise approve ${runId} toolu_keep (or deny`);
    expect((await cliWith({ STEPWISE_ENDPOINT: local.stack.url }, 'status', runId)).stdout).toContain(
      `awaits approval: STEPWISE_ENDPOINT=${local.stack.url} stepwise approve ${runId} toolu_keep (or deny`,
    );
    // Run through npm, as the README does, it shows the command through npm.
    expect((await spawnCli(['--endpoint', local.stack.url, 'status', runId], {}, 'npm').done).stdout).toContain(
      `⏸ write_file keep.md awaits approval: npm run stepwise -- --endpoint ${local.stack.url} approve ${runId} toolu_keep (or deny`,
    );

    // The command shown, run as it reads.
    const shown = approve('toolu_keep').split(' ').slice(1);
    expect(await cliWith({}, ...shown)).toEqual({ code: 0, stdout: 'toolu_keep approved\n', stderr: '' });
    // The run still waits for the other call, so this is a second decision, refused.
    const again = await cli('deny', runId, 'toolu_keep');
    expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/^error: ApprovalAlreadyDecided: Tool call toolu_keep of run \S+ was already decided: approve/)]);
    expect(await cli('deny', runId, 'toolu_drop', '--reason', 'one file is enough')).toEqual({
      code: 0,
      stdout: 'toolu_drop denied (one file is enough)\n',
      stderr: '',
    });

    const { code, stdout } = await following.done;
    expect(code).toBe(0);
    expect(progressOf(stdout).slice(-5)).toEqual([
      `  ✓ approved by local`,
      '  ✗ denied by local: one file is enough',
      '  ✗ single: A reviewer denied this tool call: one file is enough',
      '  single: Kept one file.',
      'phase complete',
    ]);
    expect(stdout).toContain('Kept one file.');
    expect(stdout).toContain('files: keep.md');
  }, 60_000);

  it('talks to --endpoint, else STEPWISE_ENDPOINT, else the local server on PORT', async () => {
    const run = await local.run(`${local.book.add('cli-endpoint', { turn: say('ok') })} Say ok.`);
    const assistant = builtinAgents[0];
    const answered = { code: 0, stdout: `${run.runId} · agent assistant@${assistant && versionOf(assistant)} · succeeded · phase complete\n\nok\n`, stderr: '' };
    const { port } = new URL(local.stack.url);
    const unused = 'http://127.0.0.1:9';

    expect(await cliWith({ PORT: port }, 'status', run.runId)).toEqual(answered);
    expect(await cliWith({ PORT: '9', STEPWISE_ENDPOINT: local.stack.url }, 'status', run.runId)).toEqual(answered);
    expect(await cliWith({ STEPWISE_ENDPOINT: unused }, '--endpoint', local.stack.url, 'status', run.runId)).toEqual(answered);
    const offline = await cliWith({ PORT: '9' }, 'status', run.runId);
    expect([offline.code, offline.stderr]).toEqual([1, expect.stringMatching(/^error: Unreachable: cannot reach http:\/\/127\.0\.0\.1:9 /)]);
    expect(await cliWith({ PORT: 'eighty' }, 'status', run.runId)).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: PORT must be a port number (1 to 65535), not "eighty"; or set STEPWISE_ENDPOINT to the API\'s URL.\n',
    });
    const notUrl = await cliWith({ STEPWISE_ENDPOINT: 'localhost:8787' }, 'status', run.runId);
    expect([notUrl.code, notUrl.stderr]).toEqual([1, expect.stringContaining("value 'localhost:8787' from env 'STEPWISE_ENDPOINT' is invalid. must be an http(s) URL")]);
  }, 60_000);

  it('follows a run on --stream-endpoint, which serves the stream routes alone, and reads the rest from --endpoint', async () => {
    const run = await local.run(`${local.book.add('cli-stream-endpoint', { turn: say('ok') })} Say ok.`);
    // As deployed: the stream function's URL answers the stream routes and 404 to any other.
    const upstream = new Hono().all('*', (c) => {
      const { pathname, search } = new URL(c.req.url);
      return fetch(new URL(`${pathname}${search}`, local.stack.url), { headers: c.req.raw.headers });
    });
    const streamOnly = await startLoopbackServer(createAdaptorServer({ fetch: streamRoutesOf(upstream).fetch }) as Server);
    try {
      const { code, stdout, stderr } = await cli('--stream-endpoint', streamOnly.url, 'watch', run.runId);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(stdout).toMatch(/^succeeded · iterations: single 1 · /m);
    } finally {
      await streamOnly.close();
    }
  }, 60_000);

  it('names any run id in its requests as given, escaped, so the API judges the id itself', async () => {
    // Unescaped, `a/b?c` would reach another route (or none); escaped, the run route refuses the id.
    const refusal = 'error: ValidationFailed: The path parameter runId is invalid. (runId: must be 1-80 letters, digits, "_" or "-")\n';
    expect(await cli('status', 'a/b?c')).toEqual({ code: 1, stdout: '', stderr: refusal });
    const files = await cli('files', 'a/b');
    expect([files.code, files.stderr]).toEqual([1, refusal]);
  }, 60_000);

  it('hands out local tokens, and lists only the runs of the caller a token names', async () => {
    const issued = await cli('token', '--sub', 'carol', '--tenant', 'cli-co');
    expect(issued.code).toBe(0);
    const carol = issued.stdout.trim();
    expect(carol).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const tag = local.book.add('cli-carol', { turn: say('Hi Carol.') });
    const started = await cliWith({ STEPWISE_TOKEN: carol }, '--endpoint', local.stack.url, '--json', 'run', '--mode', 'single', `${tag} Greet me.`);
    const runId = String((JSON.parse(started.stdout) as { runId: string }).runId);
    const mine = await cliWith({ STEPWISE_TOKEN: carol }, '--endpoint', local.stack.url, 'list');
    expect(mine.stdout.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(/^RUN ID +STATUS +PHASE +CREATED +COST +GOAL$/),
      expect.stringMatching(new RegExp(`^${runId}  (running|succeeded) .* Greet me\\.$`)),
    ]);
    // Each column starts where its heading does.
    const [heading, line] = mine.stdout.split('\n');
    expect(line?.indexOf('$')).toBe(heading?.indexOf('COST'));
    const theirs = await cli('list', '--status', 'running');
    expect(theirs.stdout).not.toContain(runId);
    const someoneElse = await cli('--token', (await cli('token', '--sub', 'dave', '--tenant', 'cli-co')).stdout.trim(), 'status', runId);
    expect(someoneElse).toEqual({ code: 1, stdout: '', stderr: `error: RunNotFound: No run ${runId}.\n` });
  }, 60_000);

  it('prints status, files and a file, and JSON for scripts', async () => {
    const tag = local.book.add('cli-single', { turn: use(['toolu_w', 'write_file', { path: 'a/b.txt', content: 'hello' }]) }, { turn: say('ok') });
    const run = await local.run(`${tag} Write it.`);
    const status = await cli('--json', 'status', run.runId);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: run.runId, status: 'succeeded' });
    expect((await cli('files', run.runId)).stdout).toBe('a/b.txt\t5\n');
    expect((await cli('cat', run.runId, 'a/b.txt')).stdout).toBe('hello');
  }, 60_000);

  it('forks a run from one of its messages and follows the fork to its result, in a copy of the files', async () => {
    const tag = local.book.add(
      'cli-fork',
      { turn: use(['toolu_w', 'write_file', { path: 'notes.md', content: 'draft' }]) },
      { turn: say('Drafted.') },
      { turn: use(['toolu_e', 'edit_file', { path: 'notes.md', old_string: 'draft', new_string: 'final' }]) },
      { turn: say('Finalized.') },
    );
    const source = await local.run(`${tag} Draft notes.`);
    const { code, stdout, stderr } = await cli('fork', source.runId, '--from', '0', '--goal', `${tag} Finalize the notes.`, '--follow');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const forkId = /^run (\S+)$/m.exec(stdout)?.[1] ?? '';
    expect(forkId).not.toBe(source.runId);
    expect(stdout).toContain(`forked from ${source.runId} (single) before message 0`);
    expect(stdout).toContain('Finalized.');
    expect(stdout).toContain('files: notes.md');
    expect((await cli('cat', forkId, 'notes.md')).stdout).toBe('final');
    expect((await cli('cat', source.runId, 'notes.md')).stdout).toBe('draft');

    // The transcript tells the messages a fork can start from (user turns) from those that carry tool results.
    const transcript = (await cli('messages', source.runId)).stdout;
    expect(transcript.split('\n').filter((l) => l.startsWith('#'))).toEqual([
      '#0 single user',
      '#1 single assistant',
      '#2 single tool results',
      '#3 single assistant',
    ]);

    const refused = await cli('fork', source.runId, '--from', '1');
    expect([refused.code, refused.stderr]).toEqual([1, "error: ValidationFailed: The body is invalid. (fromSeq: names message 1, the model's answer; fork from a user message)\n"]);
  }, 60_000);
});

describe('stepwise eval', () => {
  /** A suite file of single-mode cases, each case's goal led by its script's tag. */
  function suiteFile(dir: string, name: string, cases: object[]): string {
    const path = join(dir, `${name}.json`);
    writeFileSync(path, JSON.stringify({ name: 'cli-eval', mode: 'single', cases }));
    return path;
  }
  const judgeSays = (tag: string, pass: boolean) =>
    local.book.respondWith(tag, () => ({ turn: use(['toolu_verdict', 'final_answer', { pass, reason: pass ? 'It says five.' : 'It does not.' }]) }));

  it('runs passing, failing and erroring cases as real runs, reports each, exits 1, and --compare names a regression', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-eval-'));
    const adds = local.book.add('eval-adds', { turn: use(['toolu_r', 'read_file', { path: 'in.txt' }]) }, { turn: say('The sum is 5.') });
    const wrong = local.book.add('eval-wrong', { turn: say('The sum is 6.') });
    const first = suiteFile(dir, 'first', [
      {
        id: 'adds',
        goal: `${adds} Add the numbers in in.txt.`,
        files: { 'in.txt': '2 3' },
        expect: [{ type: 'contains', value: '5' }, { type: 'fileContains', path: 'in.txt', value: '2 3' }, { type: 'toolCalled', tool: 'read_file', times: 1 }, { type: 'judge', rubric: `${judgeSays('eval-judge-pass', true)} Says five.` }],
      },
      { id: 'wrong', goal: `${wrong} Add 2 and 3.`, expect: [{ type: 'contains', value: '5' }] },
      // No script answers this tag: the model call is refused, the run fails for a reason not the agent's.
      { id: 'broken', goal: '[[eval-unscripted]] Add 2 and 3.', expect: [{ type: 'contains', value: '5' }] },
    ]);
    const ran = await cli('eval', first, '--concurrency', '3', '--out', join(dir, 'first.report.json'));
    expect(ran.code).toBe(1);
    const report = JSON.parse(readFileSync(join(dir, 'first.report.json'), 'utf8')) as EvalReport;
    expect(report.cases.map((c) => [c.id, c.status, c.checks.map((check) => check.pass)])).toEqual([
      ['adds', 'pass', [true, true, true, true]],
      ['wrong', 'fail', [false]],
      ['broken', 'error', []],
    ]);
    expect(report.cases[0]?.checks[3]?.reason).toBe('It says five.');
    expect(report.cases[2]?.error).toMatch(/^the run failed: ModelRequestInvalid: /);
    expect(report.summary).toMatchObject({ total: 3, passed: 1, failed: 1, errored: 1 });
    expect(ran.stdout).toMatch(/^adds +PASS +✓✓✓✓ /m);
    expect(ran.stderr).toContain('[3/3] ');

    // The next version of the suite: "wrong" is fixed, "adds" is gone. Every case passes, yet a case that passed is missing.
    // (The command in this process, as the CLI runs it: one CLI start above shows the wiring.)
    const right = local.book.add('eval-right', { turn: say('The sum is 5.') });
    const second = suiteFile(dir, 'second', [{ id: 'wrong', goal: `${right} Add 2 and 3.`, expect: [{ type: 'contains', value: '5' }] }]);
    const printed: string[] = [];
    const io = { ...nodeIo, stdout: (text: string) => void printed.push(text), stderr: { write: (text: string) => printed.push(text) } };
    const options = { concurrency: 2, timeout: 30, markdown: false, json: false, out: join(dir, 'second.report.json') };
    const api = cliClient({ endpoint: local.stack.url });
    expect(await evalCommand(api, second, { ...options, compare: join(dir, 'first.report.json') }, io)).toBe(1);
    expect(printed.join('')).toContain('1 passed, 0 failed, 0 errors of 1');
    expect(printed.join('')).toContain('1 regression:\n  adds: was pass, now missing\nfixed: wrong');

    printed.length = 0;
    expect(await evalCommand(api, suiteFile(dir, 'bad', [{ id: 'x', goal: '', expect: [{ type: 'regex' }] }]), options, io)).toBe(2);
    expect(printed.join('').split('\n').slice(1, 3)).toEqual(['  cases.0.goal: must not be empty', '  cases.0.expect.0.pattern: Invalid input: expected string, received undefined']);
  }, 60_000);
});

describe('POST /evals', () => {
  it('runs a suite on the evals state machine, each case a real run: passing, failing and erroring cases reported, another caller told nothing', async () => {
    const adds = local.book.add('deployed-adds', { turn: use(['toolu_r', 'read_file', { path: 'in.txt' }]) }, { turn: say('The sum is 5.') });
    const wrong = local.book.add('deployed-wrong', { turn: say('The sum is 6.') });
    const judge = local.book.respondWith('deployed-judge', () => ({ turn: use(['toolu_verdict', 'final_answer', { pass: true, reason: 'It says five.' }]) }));
    const suite = {
      name: 'deployed-eval',
      mode: 'single',
      cases: [
        {
          id: 'adds',
          goal: `${adds} Add the numbers in in.txt.`,
          files: { 'in.txt': '2 3' },
          expect: [{ type: 'contains', value: '5' }, { type: 'toolCalled', tool: 'read_file', times: 1 }, { type: 'fileContains', path: 'in.txt', value: '2 3' }, { type: 'judge', rubric: `${judge} Says five.` }],
        },
        { id: 'wrong', goal: `${wrong} Add 2 and 3.`, expect: [{ type: 'contains', value: '5' }] },
        { id: 'broken', goal: '[[deployed-unscripted]] Add 2 and 3.', expect: [{ type: 'contains', value: '5' }] },
      ],
    };
    const refused = await local.post('/evals', { suite: { ...suite, cases: [{ id: 'x', goal: '', expect: [{ type: 'regex' }] }] } });
    expect([refused.status, (refused.body.error as { issues: { path: string }[] }).issues.map((i) => i.path)]).toEqual([400, ['suite.cases.0.goal', 'suite.cases.0.expect.0.pattern']]);

    const started = await local.post('/evals', { suite, concurrency: 2 });
    expect(started.status).toBe(202);
    const evalId = String(started.body.evalId);
    let view = (await local.get(`/evals/${evalId}`)).body;
    for (const deadline = Date.now() + 30_000; view.status === 'running' && Date.now() < deadline; view = (await local.get(`/evals/${evalId}`)).body) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const report = view.report as EvalReport;
    expect([view.status, report.cases.map((c) => [c.id, c.status, c.checks.map((check) => check.pass)])]).toEqual([
      'succeeded',
      [
        ['adds', 'pass', [true, true, true, true]],
        ['wrong', 'fail', [false]],
        ['broken', 'error', []],
      ],
    ]);
    expect(report.cases[0]?.checks[3]?.reason).toBe('It says five.');
    expect(report.cases[2]?.error).toMatch(/^the run failed: ModelRequestInvalid: /);
    expect(view.summary).toMatchObject({ total: 3, passed: 1, failed: 1, errored: 1 });
    // Each case was a run of the caller's, recording the eval.
    const caseRun = (await local.get(`/runs/${String(report.cases[0]?.runId)}`)).body;
    expect([caseRun.status, caseRun.evalId]).toEqual(['succeeded', evalId]);
    expect(((await local.get('/evals')).body.items as { evalId: string }[])[0]?.evalId).toBe(evalId);

    const { token } = (await local.post('/_local/tokens', { sub: 'eve' })).body as { token: string };
    const asEve = await fetch(`${local.stack.url}/evals/${evalId}`, { headers: { authorization: `Bearer ${token}` } });
    expect([asEve.status, ((await asEve.json()) as { error: { code: string } }).error.code]).toEqual([404, 'NotFound']);
  }, 60_000);
});

describe('the stepwise command', () => {
  /** A copy of the command beside a stand-in bundle and source that each say which of them ran. */
  function commandCopy(): string {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-command-'));
    mkdirSync(join(dir, 'bin'));
    mkdirSync(join(dir, 'dist'));
    symlinkSync(resolve('node_modules'), join(dir, 'node_modules'));
    copyFileSync('bin/stepwise.mjs', join(dir, 'bin/stepwise.mjs'));
    // An ES module package, as the project is: without a package type, this machine's Node 20
    // loads the .ts source through its CommonJS loader, past the hooks tsx registers for ES modules.
    copyFileSync('package.json', join(dir, 'package.json'));
    writeFileSync(join(dir, 'bin/stepwise.ts'), "const ran: string = 'source';\nconsole.log(ran);\n");
    const past = new Date(Date.now() - 60_000);
    utimesSync(join(dir, 'bin/stepwise.ts'), past, past);
    writeFileSync(join(dir, 'dist/stepwise.mjs'), "console.log('bundle');\n");
    writeFileSync(join(dir, 'dist/stepwise.meta.json'), JSON.stringify({ inputs: { 'bin/stepwise.ts': {} }, outputs: {} }));
    return dir;
  }

  const ranFrom = (dir: string) => execFileSync(process.execPath, [join(dir, 'bin/stepwise.mjs')], { encoding: 'utf8' }).trim();

  it('runs the bundle while no source it was built from is newer, else the sources through tsx', () => {
    const dir = commandCopy();
    try {
      expect(ranFrom(dir)).toBe('bundle');
      const later = new Date(Date.now() + 60_000);
      utimesSync(join(dir, 'bin/stepwise.ts'), later, later);
      expect(ranFrom(dir)).toBe('source');
      rmSync(join(dir, 'dist'), { recursive: true });
      expect(ranFrom(dir)).toBe('source');
    } finally {
      rmSync(dir, { recursive: true });
    }
  }, 30_000);

  // What the bundle loads is what every command pays for before it answers: core modules would
  // bring zod and the tools, the signing packages are for deployed APIs only, the eval command's
  // suite schemas and checks are for evals only (a chunk of their own).
  it('carries the CLI sources alone, and loads the signing packages only to sign and the eval modules only for evals', () => {
    const meta = JSON.parse(readFileSync('dist/stepwise.meta.json', 'utf8')) as {
      outputs: Record<string, { inputs: Record<string, unknown>; imports: { path: string; kind: string }[] }>;
    };
    const output = (path: string) => meta.outputs[path] ?? { inputs: {}, imports: [] };
    const chunk = (path: string) => path.startsWith('dist/');
    // The entry and the chunks it imports: what loads with every command.
    const startup = ['dist/stepwise.mjs', ...output('dist/stepwise.mjs').imports.filter((i) => i.kind === 'import-statement' && chunk(i.path)).map((i) => i.path)];
    expect(startup.flatMap((path) => Object.keys(output(path).inputs)).sort()).toEqual([
      'bin/cli/client.ts',
      'bin/cli/describe.ts',
      'bin/cli/memories.ts',
      'bin/cli/schedules.ts',
      'bin/cli/watch.ts',
      'bin/stepwise.ts',
      'functions/api/client.ts',
      'functions/core/agents/phases.ts',
    ]);
    const imports = startup.flatMap((path) => output(path).imports).filter((i) => !chunk(i.path));
    const loaded = (kind: string) => imports.filter((i) => i.kind === kind).map((i) => i.path).sort();
    expect([loaded('import-statement'), loaded('dynamic-import')]).toEqual([
      ['commander', 'eventsource-parser/stream', 'hono/client'],
      // Signing, and reading a schedule's JSON file, load what they need when they run.
      ['@aws-sdk/credential-providers', 'aws4fetch', 'node:fs/promises'],
    ]);
    const later = output('dist/stepwise.mjs').imports.filter((i) => i.kind === 'dynamic-import' && chunk(i.path));
    expect(later.map((i) => Object.keys(output(i.path).inputs).includes('bin/cli/eval.ts'))).toEqual([true]);
  });
});
