/**
 * Reading a run's event stream from the store, a little at a time (docs/events.md, "Read
 * order, and why it is safe"). Each tick reads only what can be new, in the one order that keeps
 * `deriveRunEvents` safe:
 *
 *   1. the conversation of the agent at work, from the first item that may be missing
 *   2. its live attempts from the current one, when a model call may be or have been under way
 *   3. the run partition: the run record and the approvals
 *
 * The run record used for "has the run ended / handed over" is the one read BEFORE the
 * conversation (the previous tick's step 3): whatever the run stored before it ended is then in
 * what step 1 read. The approvals used are the ones read AFTER the conversation: a call whose
 * result was read has its approval (opened before the result) in them, so a result without one
 * was never gated. Live attempts are read after the conversation: an answer seen stored has
 * every flush of its attempt in what step 2 read (flushes stop before the answer is stored).
 */
import type { Approval } from '../approvals/types.js';
import { type ConversationRecord } from '../conversation/types.js';
import { conversationIdOf } from '../conversation/conversation.js';
import { NotFound } from '../errors/errors.js';
import type { LiveAttempt, LiveFrom } from '../live/types.js';
import { toolUses } from '../model/messages.js';
import type { AgentName } from '../agents/types.js';
import type { Run } from '../runs/types.js';
import {
  type AgentView,
  type Derivation,
  type Position,
  type PositionedEvent,
  type RunEventSources,
  type StreamState,
  type TickResult,
} from './types.js';
import { agentsOf, comparePositions, parseCursor } from './cursor.js';
import { deriveRunEvents } from './derive.js';

/** One run's stream, read tick by tick from a store. */
export class RunEventReader {
  private readonly agents: AgentName[];
  private readonly state: StreamState;
  /** The newest run record read; it becomes `state.run` when a conversation is read after it. */
  private latestRun: Run;
  private last: Position | undefined;
  private readonly start: { agent: number; seq: number };
  private derivation: Derivation;
  private ticks = 0;

  /**
   * `run` is the run record as just read (before anything else); `after`, a cursor of this run's
   * stream (`InvalidCursor` otherwise): only the events after it are returned.
   */
  constructor(
    private readonly sources: RunEventSources,
    run: Run,
    after?: string,
  ) {
    this.agents = agentsOf(run);
    this.last = after === undefined ? undefined : parseCursor(after, this.agents);
    this.lastCursor = after;
    this.start = startOf(this.last, this.agents.length);
    this.state = { run, approvals: new Map(), agents: {} };
    this.latestRun = run;
    // A resumed stream needs nothing of the agents before the one it resumes in.
    for (let k = 0; k < this.start.agent && k < this.agents.length; k++) {
      this.state.agents[this.agents[k] as AgentName] = emptyView(Number.POSITIVE_INFINITY);
    }
    this.derivation = deriveRunEvents(this.state);
  }

  /** The cursor of the last event returned, or the one the reader started after. */
  get cursor(): string | undefined {
    return this.lastCursor;
  }

  private lastCursor: string | undefined;

  /** Reads what may be new and returns the events it allows. */
  async tick(): Promise<TickResult> {
    const wait = this.derivation.wait;
    // Everything there is to show may be known before any read (a resumed stream of an ended run).
    if (!wait) return { events: this.take(), done: true, changed: false, again: false };
    let changed: boolean;
    if (wait.decisionOnly && this.ticks > 0 && !this.runPending()) {
      // Only a decision, a cancel or a failure can move the stream on: the run partition says.
      changed = await this.readRunPartition();
    } else {
      const before = this.latestRun;
      changed = await this.readAgent(wait.agent);
      changed = (await this.readRunPartition()) || changed;
      this.state.run = before;
    }
    this.ticks++;
    this.derivation = deriveRunEvents(this.state);
    const events = this.take();
    return { events, done: this.derivation.done, changed: changed || events.length > 0, again: this.runPending() && !this.derivation.done };
  }

  /** The newest run record read differs from the one the stream stands on: a conversation read must take it in. */
  private runPending(): boolean {
    const { latestRun: latest, state } = this;
    return (
      latest.updatedAt !== state.run.updatedAt ||
      latest.status !== state.run.status ||
      latest.phase !== state.run.phase ||
      childCount(latest) !== childCount(state.run)
    );
  }

  /**
   * How many derived events were returned or lie before the cursor. Derivations only grow, so once
   * an event beyond the cursor is known, every later derivation's events up to here are the same.
   */
  private covered: number | undefined;

  /** The derived events after the last one returned. */
  private take(): PositionedEvent[] {
    const derived = this.derivation.events;
    if (this.covered === undefined) {
      const last = this.last;
      const beyond = last === undefined ? 0 : derived.findIndex((e) => comparePositions(parseCursor(e.cursor, this.agents), last) > 0);
      if (beyond < 0) return [];
      this.covered = beyond;
    }
    const events = derived.slice(this.covered);
    this.covered = derived.length;
    const newest = events.at(-1);
    if (newest) {
      this.last = parseCursor(newest.cursor, this.agents);
      this.lastCursor = newest.cursor;
    }
    return events;
  }

  /** Reads an agent's conversation from where it may have news, then its live attempts if they can change. */
  private async readAgent(agent: AgentName): Promise<boolean> {
    const existing = this.state.agents[agent];
    if (existing && !Number.isFinite(existing.fromSeq)) return false;
    const { runId, sessionId, owner } = this.state.run;
    const fromSeq = this.agents.indexOf(agent) === this.start.agent ? this.start.seq : 0;
    const from = existing ? resumeFrom(existing) : { seq: fromSeq };
    const records = await this.sources.conversationFrom(conversationIdOf(runId, agent, sessionId, owner), from, runId);
    const view = existing ?? emptyView(fromSeq);
    let changed = mergeRecords(view, records, runId);
    const live = liveFrom(view, agent, existing === undefined);
    if (live) {
      changed = this.mergeAttempts(view, agent, await this.sources.liveTexts.list(runId, live)) || changed;
      // Every answer read so far (and every seq before it) has its attempts final in what was just read.
      const lastSeq = lastMessageSeq(view);
      if (lastSeq !== undefined) view.liveSettledTo = Math.max(view.liveSettledTo, lastSeq + 1);
    }
    view.liveFresh = live !== undefined;
    this.state.agents[agent] = view;
    return changed || existing === undefined;
  }

  /** Live reads so far, and the read in which each attempt was first seen to have a later one. */
  private liveReads = 0;
  private readonly successorSeen: Partial<Record<AgentName, Map<string, number>>> = {};

  private mergeAttempts(view: AgentView, agent: AgentName, attempts: LiveAttempt[]): boolean {
    return mergeAttempts(view, attempts, ++this.liveReads, (this.successorSeen[agent] ??= new Map()));
  }

  /** Reads the run record and the approvals; whether anything the stream shows changed. */
  private async readRunPartition(): Promise<boolean> {
    const { run, approvals } = await this.sources.runWithApprovals(this.state.run.runId);
    if (!run) throw new NotFound(`Run ${this.state.run.runId} is gone.`);
    const before = approvalsKey(this.state.approvals.values());
    const changed =
      run.updatedAt !== this.latestRun.updatedAt ||
      run.status !== this.latestRun.status ||
      childCount(run) !== childCount(this.latestRun) ||
      before !== approvalsKey(approvals);
    this.latestRun = run;
    this.state.approvals = new Map(approvals.map((a) => [a.toolUseId, a]));
    return changed;
  }
}

/** Where a resumed stream starts reading: the cursor's agent, from its slot. */
function startOf(position: Position | undefined, agents: number): { agent: number; seq: number } {
  if (!position) return { agent: 0, seq: 0 };
  const { group } = position;
  switch (group.kind) {
    case 'header':
      return { agent: 0, seq: 0 };
    case 'open':
      return { agent: group.agent, seq: 0 };
    case 'slot':
      return { agent: group.agent, seq: group.seq };
    case 'close':
      return { agent: group.agent + 1, seq: 0 };
    case 'end':
      return { agent: agents, seq: 0 };
  }
}

function emptyView(fromSeq: number): AgentView {
  return { fromSeq, messages: new Map(), results: new Map(), attempts: new Map(), finalAttempts: new Set(), liveSettledTo: fromSeq, liveFresh: false };
}

function lastMessageSeq(view: AgentView): number | undefined {
  let last: number | undefined;
  for (const seq of view.messages.keys()) if (last === undefined || seq > last) last = seq;
  return last;
}

/**
 * Where this conversation may have news: the results of the first answer whose calls are not
 * all answered (results arrive in any order, so from the first missing one), else what follows
 * the last message read.
 */
export function resumeFrom(view: AgentView): { seq: number; result?: number } {
  const answers = [...view.messages].filter(([, m]) => m.role === 'assistant').sort(([a], [b]) => a - b);
  for (const [seq, message] of answers) {
    const results = view.results.get(seq) ?? [];
    const calls = toolUses(message).length;
    for (let i = 0; i < calls; i++) if (!results[i]) return { seq, result: i };
  }
  const last = lastMessageSeq(view);
  if (last === undefined) return { seq: view.fromSeq };
  const results = view.results.get(last) ?? [];
  let answered = 0;
  while (results[answered]) answered++;
  return { seq: last, result: answered };
}

/**
 * Where to read live attempts from, or `undefined` when none can have changed: none is under
 * way (no model call can be running) and no stored answer waits for its attempts to be read.
 */
export function liveFrom(view: AgentView, agent: AgentName, first: boolean): LiveFrom | undefined {
  const seq = view.liveSettledTo;
  if (!Number.isFinite(seq)) return undefined;
  const last = lastMessageSeq(view);
  const storedBeyond = last !== undefined && last >= seq;
  const underWay = [...view.attempts.keys()].some((s) => s >= seq);
  const modelMayRun = last !== undefined && view.messages.get(last)?.role === 'user';
  if (!first && !storedBeyond && !underWay && !modelMayRun) return undefined;
  // Attempts known final need no reading again.
  const known = view.attempts.get(seq)?.find((a) => !view.finalAttempts.has(a.attempt));
  return { agent, seq, ...(known ? { attempt: known.attempt } : {}) };
}

function mergeRecords(view: AgentView, records: ConversationRecord[], runId: string): boolean {
  let changed = false;
  for (const record of records) {
    if (record.kind === 'message') {
      if (record.meta.runId !== runId || record.seq < view.fromSeq || view.messages.has(record.seq)) continue;
      view.messages.set(record.seq, { role: record.role, content: record.content, meta: record.meta });
      changed = true;
    } else if (record.kind === 'result') {
      const list = view.results.get(record.seq) ?? [];
      if (list[record.index]) continue;
      list[record.index] = { result: record.result, ran: record.ran !== false };
      view.results.set(record.seq, list);
      changed = true;
    }
  }
  return changed;
}

/**
 * Merges the attempts a live read returned. An attempt is final once a read made after the read
 * that first showed a later attempt of its seq returned it: pages of one query are read one
 * after another, so an attempt on an earlier page may be older than a later one on the next.
 */
function mergeAttempts(view: AgentView, attempts: LiveAttempt[], read: number, successorSeen: Map<string, number>): boolean {
  const returned = new Set(attempts.map((a) => a.attempt));
  let changed = false;
  for (const attempt of attempts) {
    if (attempt.seq < view.fromSeq) continue;
    const list = view.attempts.get(attempt.seq) ?? [];
    const index = list.findIndex((a) => a.attempt === attempt.attempt);
    if (index >= 0) {
      // Items only grow: a shorter copy is an older read.
      if ((list[index] as LiveAttempt).chunks.length >= attempt.chunks.length) continue;
      list[index] = attempt;
    } else {
      list.push(attempt);
      list.sort((a, b) => (a.attempt < b.attempt ? -1 : a.attempt > b.attempt ? 1 : 0));
    }
    view.attempts.set(attempt.seq, list);
    changed = true;
  }
  for (const list of view.attempts.values()) {
    for (const attempt of list.slice(0, -1)) {
      if (view.finalAttempts.has(attempt.attempt)) continue;
      const seen = successorSeen.get(attempt.attempt);
      if (seen === undefined) successorSeen.set(attempt.attempt, read);
      else if (seen < read && returned.has(attempt.attempt)) view.finalAttempts.add(attempt.attempt);
    }
  }
  return changed;
}

function approvalsKey(approvals: Iterable<Approval>): string {
  return [...approvals]
    .map((a) => `${a.toolUseId}:${a.decision ?? ''}`)
    .sort()
    .join(',');
}

/** The child runs a run records: recording one changes no other field the stream compares. */
function childCount(run: Pick<Run, 'children'>): number {
  return Object.keys(run.children ?? {}).length;
}
