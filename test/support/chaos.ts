/**
 * The chaos run: many runs through the local stack while a seeded fault injector makes the model
 * answer 429/529/500 or drop the connection, crashes the inference and tool steps after their
 * write and before their answer, fails steps as a throttled store would, stops orchestrator
 * executions, and redelivers events. Every decision is a function of the seed and of what is
 * being decided (the run, the step, the attempt), never of timing, so a seed replays the same
 * faults however the runs interleave. Afterwards, `verify` checks that nothing is stuck, lost or
 * duplicated. Shared by `test/integration/chaos.test.ts` (20 runs) and `npm run bench` (200).
 */
import { createHash } from 'node:crypto';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import type { ConversationStore } from '../../functions/core/conversation/types.js';
import type { Run } from '../../functions/core/runs/types.js';
import type { Reply, WireRequest } from '../../local/stand-ins/messages-api.js';
import type { LocalHandler } from '../../local/runtime/runtime.js';
import { say, use } from './agents.js';
import type { StackFixture } from './local-stack.js';
import { row } from '../bench/table.js';

export interface ChaosOptions {
  runs: number;
  seed: number;
  /** Chance that one model request fails (429, 529, 500 or a dropped connection, in turn). */
  modelFault: number;
  /** Chance that one step attempt crashes after its work, before it answers. */
  crash: number;
  /** Chance that one step attempt fails as a throttled DynamoDB or S3 surfaces (`StoreUnavailable`) before it works. */
  throttle: number;
  /** Share of runs whose orchestrator execution is stopped while it runs. */
  stop: number;
  /** Share of runs started by an event that is then delivered again. */
  redeliver: number;
  /** Events that fail validation, to be dead-lettered with their reason. */
  invalidEvents: number;
  /** Runs more whose first step crashes on every attempt, so its retries are spent. */
  exhausted: number;
}

export const faultKinds = [
  'model 429',
  'model 529',
  'model 500',
  'model dropped connection',
  'step crashed after its write',
  'step crashed on every attempt',
  'store throttled',
  'execution stopped',
  'event redelivered',
] as const;

/** The client run ids of the runs whose first step always crashes: this, then their number. */
const exhaustedPrefix = (seed: number) => `chaos-${seed}-exhausted-`;
const crashed = 'Runtime exited before returning (injected)';
export type FaultKind = (typeof faultKinds)[number];

/** A number in [0, 1) from the seed and a description of what is decided. */
function chance(seed: number, ...what: (string | number)[]): number {
  const digest = createHash('sha256').update(`${seed}|${what.join('|')}`).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

/** The fault injector: its handler wrapper goes to the local stack, its responder to the Messages API. */
export class Chaos {
  readonly injected = new Map<FaultKind, number>(faultKinds.map((k) => [k, 0]));
  /** Successful model answers, by run tag and turn. */
  readonly answers = new Map<string, number>();
  private readonly attempts = new Map<string, number>();
  armed = false;

  constructor(readonly options: ChaosOptions) {}

  private count(kind: FaultKind): void {
    this.injected.set(kind, (this.injected.get(kind) ?? 0) + 1);
  }

  private attempt(key: string): number {
    const n = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, n);
    return n;
  }

  /** Wraps each step handler: a throttled store before the work, a crash after it. */
  wrap = (name: string, handler: LocalHandler): LocalHandler => {
    return async (event) => {
      const e = event as { runId?: string; agent?: string; iteration?: number; toolUseId?: string };
      const step = `${name}:${e.runId}:${e.agent}:${e.toolUseId ?? e.iteration}`;
      const n = this.attempt(step);
      if (this.armed && name === 'inference' && e.runId?.startsWith(exhaustedPrefix(this.options.seed))) {
        if (n === 1) this.count('step crashed on every attempt');
        throw Object.assign(new Error(crashed), { name: 'Lambda.Unknown' });
      }
      if (this.armed && name !== 'approval' && chance(this.options.seed, 'throttle', step, n) < this.options.throttle) {
        this.count('store throttled');
        throw Object.assign(new Error('Rate exceeded (injected)'), { name: 'StoreUnavailable' });
      }
      const result = await handler(event);
      if (this.armed && chance(this.options.seed, 'crash', step, n) < this.options.crash) {
        this.count('step crashed after its write');
        throw Object.assign(new Error(crashed), { name: 'Lambda.Unknown' });
      }
      return result;
    };
  };

  /**
   * Answers a run's model requests from its script by the turn the request is at (its assistant
   * messages so far), so retries and faults never shift the script; some requests fail instead.
   */
  respond(tag: string, turns: Reply[]): (body: WireRequest) => Reply {
    return (body) => {
      const turn = body.messages.filter((m) => m.role === 'assistant').length;
      const key = `${tag}:${turn}`;
      const n = this.attempt(`model:${key}`);
      const roll = chance(this.options.seed, 'model', key, n);
      if (this.armed && roll < this.options.modelFault) {
        const which = Math.floor((roll / this.options.modelFault) * 4);
        const faults: [FaultKind, Reply][] = [
          ['model 429', { status: 429, type: 'rate_limit_error', message: 'Rate limited (injected)', headers: { 'retry-after': '0' } }],
          ['model 529', { status: 529, type: 'overloaded_error', message: 'Overloaded (injected)' }],
          ['model 500', { status: 500, type: 'api_error', message: 'Internal error (injected)' }],
          ['model dropped connection', { drop: true }],
        ];
        const [kind, reply] = faults[Math.min(3, which)] ?? faults[0]!;
        this.count(kind);
        return reply;
      }
      const reply = turns[turn] ?? { status: 400, type: 'invalid_request_error', message: `No turn ${turn} in script ${tag}.` };
      if ('turn' in reply) this.answers.set(key, (this.answers.get(key) ?? 0) + 1);
      return reply;
    };
  }

  /** Whether a run's execution is to be stopped, and whether its event is to be delivered again. */
  stops(i: number): boolean {
    return chance(this.options.seed, 'stop', i) < this.options.stop;
  }
  redelivers(i: number): boolean {
    return chance(this.options.seed, 'redeliver', i) < this.options.redeliver;
  }
  noteStop(): void {
    this.count('execution stopped');
  }
  noteRedelivery(): void {
    this.count('event redelivered');
  }
}

/** One run's script: parallel write and calculator calls, a read, then the answer. */
export function chaosScript(i: number): Reply[] {
  return [
    { turn: use([`toolu_w${i}`, 'write_file', { path: `f${i}.txt`, content: `run ${i}` }], [`toolu_c${i}`, 'calculator', { operation: 'add', a: i, b: 1 }]) },
    { turn: use([`toolu_r${i}`, 'read_file', { path: `f${i}.txt` }]) },
    { turn: say(`done ${i}`) },
  ];
}

export interface ChaosOutcome {
  runs: Run[];
  outcomes: Record<string, number>;
  lost: number;
  duplicated: number;
  stuck: number;
  extraModelCalls: number;
  lockedSessions: number;
  deadLettered: number;
  wallMs: number;
  problems: string[];
}

/**
 * Starts the runs (some by event, some on sessions), stops and redelivers as the seed says,
 * waits for every run to end, and checks the outcome.
 */
export async function chaosRun(local: StackFixture, chaos: Chaos, conversations: ConversationStore): Promise<ChaosOutcome> {
  const { options } = chaos;
  const started = Date.now();
  chaos.armed = true;
  const ids: string[] = [];
  const sessions: string[] = [];
  await Promise.all(
    Array.from({ length: options.runs }, async (_, i) => {
      const tag = `chaos-${options.seed}-${i}`;
      local.book.respondWith(tag, chaos.respond(tag, chaosScript(i)));
      const goal = `[[${tag}]] Write f${i}.txt and add ${i} and 1.`;
      const sessionId = i % 5 === 0 ? `chaos-session-${options.seed}-${i}` : undefined;
      if (sessionId) sessions.push(sessionId);
      if (chaos.redelivers(i) && !sessionId) {
        const runId = `chaos-${options.seed}-${i}`;
        const put = await local.post('/_local/events', { Source: 'chaos.test', DetailType: 'Stepwise Run Requested', Detail: { goal, mode: 'single', runId } });
        const eventId = (put.body.Entries as { EventId: string }[])[0]?.EventId ?? '';
        await local.stack.redeliver(eventId);
        chaos.noteRedelivery();
        ids[i] = runId;
      } else {
        const res = await local.post('/runs', { goal, mode: 'single', ...(sessionId ? { sessionId } : {}) });
        if (res.status !== 202) throw new Error(`POST /runs answered ${res.status}: ${JSON.stringify(res.body)}`);
        ids[i] = String(res.body.runId);
      }
    }),
  );
  const exhausted = Array.from({ length: options.exhausted }, (_, n) => `${exhaustedPrefix(options.seed)}${n}`);
  for (const runId of exhausted) {
    await local.post('/_local/events', { Source: 'chaos.test', DetailType: 'Stepwise Run Requested', Detail: { goal: `Crash every time (${runId}).`, mode: 'single', runId } });
  }
  for (let n = 0; n < options.invalidEvents; n++) {
    await local.post('/_local/events', { Source: 'chaos.test', DetailType: 'Stepwise Run Requested', Detail: { goal: '', mode: 'sideways' } });
  }
  // Stop some executions while they run, as someone in the console would.
  await Promise.all(
    ids.map(async (runId, i) => {
      if (!chaos.stops(i)) return;
      await new Promise((r) => setTimeout(r, 30 + (i % 7) * 15));
      const execution = local.stack.runtime.list().find((e) => e.name === runId && e.status === 'RUNNING');
      if (!execution) return;
      local.stack.runtime.stop(execution.executionArn, 'Chaos', 'Stopped by the chaos run');
      chaos.noteStop();
    }),
  );
  const runs = await Promise.all(ids.map((id) => local.waitFor(id, 240_000).catch(() => undefined)));
  const spent = await Promise.all(exhausted.map((id) => local.waitFor(id, 240_000)));
  await local.stack.runtime.idle();
  const wallMs = Date.now() - started;
  chaos.armed = false;
  const outcome = await verify(local, chaos, conversations, ids, runs, sessions, wallMs);
  // A step whose retries are spent names that, the error that kept coming and what it said.
  for (const run of spent) {
    const label = run.status === 'failed' ? `failed ${run.error?.code ?? '(no error)'}` : run.status;
    outcome.outcomes[label] = (outcome.outcomes[label] ?? 0) + 1;
    const expected = `The step failed with Lambda.Unknown until its retries were spent: ${crashed}`;
    if (run.error?.code !== 'RetriesExhausted' || run.error.message !== expected) outcome.problems.push(`${run.runId} ended ${label}: ${run.error?.message ?? ''}`);
  }
  return outcome;
}


async function verify(
  local: StackFixture,
  chaos: Chaos,
  conversations: ConversationStore,
  ids: string[],
  maybeRuns: (Run | undefined)[],
  sessions: string[],
  wallMs: number,
): Promise<ChaosOutcome> {
  const problems: string[] = [];
  const outcomes: Record<string, number> = {};
  let lost = 0;
  let duplicated = 0;
  let stuck = 0;
  let extraModelCalls = 0;
  const runs: Run[] = [];
  for (const [i, maybe] of maybeRuns.entries()) {
    const run = maybe ?? ((await local.get(`/runs/${ids[i]}`)).body as unknown as Run);
    runs.push(run);
    const label = run.status === 'failed' ? `failed ${run.error?.code ?? '(no error)'}` : run.status;
    outcomes[label] = (outcomes[label] ?? 0) + 1;
    if (run.status === 'running') {
      stuck++;
      problems.push(`${run.runId} is still running`);
    }
    if (run.status === 'failed' && !run.error?.code) problems.push(`${run.runId} failed without a named error`);
    if (run.status === 'failed' && /^(?:Lambda|Sandbox|States)\./.test(run.error?.code ?? '')) problems.push(`${run.runId} failed with ${run.error?.code}, a name that says where, not why`);
    const { messages } = await conversations.load(conversationIdOf(run.runId, 'single', run.sessionId, run.owner));
    const mine = messages.filter((m) => m.meta.runId === run.runId);
    // Contiguous: the conversation's sequence numbers have no gap and no repeat.
    const seqs = messages.map((m) => m.seq);
    if (seqs.some((s, n) => s !== n)) {
      lost++;
      problems.push(`${run.runId}: sequence ${seqs.join(',')}`);
    }
    // Every tool_use answered exactly once, in the next user message, in order.
    for (const [n, m] of mine.entries()) {
      const calls = m.role === 'assistant' ? m.content.filter((b) => b.type === 'tool_use').map((b) => (b as { id: string }).id) : [];
      if (!calls.length) continue;
      const next = mine[n + 1];
      const answered = (next?.content ?? []).filter((b) => b.type === 'tool_result').map((b) => (b as { tool_use_id: string }).tool_use_id);
      if (!next) {
        if (run.status === 'succeeded') problems.push(`${run.runId}: calls ${calls.join(',')} never answered`);
        continue;
      }
      if (answered.length > calls.length) duplicated++;
      if (JSON.stringify(answered) !== JSON.stringify(calls)) problems.push(`${run.runId}: calls ${calls.join(',')} answered by ${answered.join(',')}`);
    }
    // One model answer per stored assistant message (a retried step never calls the model again).
    const tag = `chaos-${chaos.options.seed}-${i}`;
    const stored = mine.filter((m) => m.role === 'assistant').length;
    let answered = 0;
    for (let turn = 0; turn < 3; turn++) answered += chaos.answers.get(`${tag}:${turn}`) ?? 0;
    if (answered > stored) {
      extraModelCalls += answered - stored;
      problems.push(`${run.runId}: ${answered} model answers for ${stored} stored messages`);
    }
    if (run.status === 'succeeded' && run.result?.response !== `done ${i}`) problems.push(`${run.runId}: answer ${run.result?.response}`);
  }
  // No session is left locked: a new run on each session is admitted.
  let lockedSessions = 0;
  for (const sessionId of sessions) {
    const tag = `${sessionId}-after`;
    local.book.respondWith(tag, () => ({ turn: say('after') }));
    const res = await local.post('/runs', { goal: `[[${tag}]] Hi.`, mode: 'single', sessionId });
    if (res.status !== 202) {
      lockedSessions++;
      problems.push(`session ${sessionId} still locked (${res.status})`);
    } else await local.waitFor(String(res.body.runId));
  }
  const letters = ((await local.get('/_local/dead-letters')).body.items ?? []) as { reason?: string; event?: { source?: string } }[];
  const deadLettered = letters.filter((l) => l.event?.source === 'chaos.test' && typeof l.reason === 'string' && l.reason.length > 0).length;
  return { runs, outcomes, lost, duplicated, stuck, extraModelCalls, lockedSessions, deadLettered, wallMs, problems };
}

/** The outcome as a table, for the bench and docs/reliability.md. */
export function chaosReport(chaos: Chaos, outcome: ChaosOutcome): string {
  const lines = [
    row(['runs', chaos.options.runs]),
    row(['---', '---']),
    ...[...chaos.injected].map(([kind, n]) => row([`faults: ${kind}`, n])),
    ...Object.entries(outcomes(outcome)).map(([label, n]) => row([`outcome: ${label}`, n])),
    row(['messages lost', outcome.lost]),
    row(['tool results duplicated', outcome.duplicated]),
    row(['model calls beyond stored answers', outcome.extraModelCalls]),
    row(['runs stuck running', outcome.stuck]),
    row(['sessions left locked', outcome.lockedSessions]),
    row(['invalid events dead-lettered with a reason', outcome.deadLettered]),
    row(['wall time', `${(outcome.wallMs / 1000).toFixed(1)} s`]),
  ];
  return lines.join('\n');
}

function outcomes(outcome: ChaosOutcome): Record<string, number> {
  return Object.fromEntries(Object.entries(outcome.outcomes).sort());
}
