/**
 * A run's store growing while the event stream reads it: the writes of a run in the order its
 * steps make them (a generated scenario), landing a few at a time before each read, even
 * between the pages of one query. For the stream's derivation and reader tests.
 */
import { type AGUIEvent, EventType } from '@ag-ui/core';
import { EventSchema } from '@ag-ui/core/schemas';
import type { Approval } from '../../functions/core/approvals/types.js';
import { type ConversationRecord, type MessageMeta } from '../../functions/core/conversation/types.js';
import { conversationIdOf, seqKey } from '../../functions/core/conversation/conversation.js';
import type { LiveAttempt, LiveChunk, LiveFrom } from '../../functions/core/live/types.js';
import { type ContentBlock, toolUses } from '../../functions/core/model/messages.js';
import type { AgentName } from '../../functions/core/agents/types.js';
import type { Run } from '../../functions/core/runs/types.js';
import { type ConversationFrom, type PositionedEvent, type RunEventSources } from '../../functions/core/stream/types.js';
import { RunEventReader } from '../../functions/core/stream/reader.js';

/** One write of a run's store. */
export type Write = (world: World) => void;

/** The store in memory, keyed as DynamoDB keys it; reads see what has landed, page by page. */
export class World implements RunEventSources {
  run: Run;
  readonly approvals = new Map<string, Approval>();
  readonly conversations = new Map<string, Map<string, ConversationRecord>>();
  readonly live = new Map<string, LiveAttempt>();
  /** Writes not landed yet, in order. */
  pending: Write[] = [];
  /** How many pending writes land before each read (each page of a query is a read). */
  pace: () => number = () => 0;
  /** Reads (requests) so far, by kind. */
  readonly reads = { conversation: 0, live: 0, run: 0 };

  constructor(run: Run) {
    this.run = structuredClone(run);
  }

  /** Lands every pending write. */
  settle(): void {
    while (this.pending.length) (this.pending.shift() as Write)(this);
  }

  private land(): void {
    for (let k = this.pace(); k > 0 && this.pending.length; k--) (this.pending.shift() as Write)(this);
  }

  conversation(id: string): Map<string, ConversationRecord> {
    let items = this.conversations.get(id);
    if (!items) this.conversations.set(id, (items = new Map()));
    return items;
  }

  /** Pages of two items (filtered after paging, as DynamoDB does), a write or more landing before each. */
  async conversationFrom(conversationId: string, from: ConversationFrom, runId: string): Promise<ConversationRecord[]> {
    const start = from.result === undefined ? messageKey(from.seq) : resultKey(from.seq, from.result);
    return this.paged(
      () => [...this.conversation(conversationId).entries()].filter(([key]) => key >= start),
      2,
      (record) => record.kind !== 'message' || record.meta.runId === runId,
      'conversation',
    );
  }

  readonly liveTexts = {
    list: async (_runId: string, from: LiveFrom): Promise<LiveAttempt[]> => {
      const start = `${from.agent}#${seqKey(from.seq)}#${from.attempt ?? ''}`;
      return this.paged(() => [...this.live.entries()].filter(([key]) => key >= start && key <= `${from.agent}#~`), 1, () => true, 'live');
    },
  };

  async runWithApprovals(): Promise<{ run: Run | undefined; approvals: Approval[] }> {
    this.land();
    this.reads.run++;
    return { run: structuredClone(this.run), approvals: [...this.approvals.values()].map((a) => structuredClone(a)) };
  }

  private async paged<T>(entries: () => [string, T][], size: number, keep: (item: T) => boolean, kind: 'conversation' | 'live'): Promise<T[]> {
    const out: T[] = [];
    let after: string | undefined;
    for (;;) {
      this.land();
      this.reads[kind]++;
      const page = entries()
        .filter(([key]) => after === undefined || key > after)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .slice(0, size);
      for (const [, item] of page) if (keep(item)) out.push(structuredClone(item));
      if (page.length < size) return out;
      after = (page.at(-1) as [string, T])[0];
    }
  }
}

export function messageKey(seq: number): string {
  return `m#${seqKey(seq)}`;
}

export function resultKey(seq: number, index: number): string {
  return `m#${seqKey(seq)}#r#${index.toString().padStart(4, '0')}`;
}

/** Reads a run's stream with a fresh reader until its last event, as a watcher that connects now would. */
export async function readAll(world: World, after?: string, maxTicks = 10_000): Promise<PositionedEvent[]> {
  const reader = new RunEventReader(world, structuredClone(world.run), after);
  const events: PositionedEvent[] = [];
  for (let i = 0; i < maxTicks; i++) {
    const result = await reader.tick();
    events.push(...result.events);
    if (result.done) return events;
  }
  throw new Error(`The stream did not end within ${maxTicks} reads.`);
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

export interface Scenario {
  run: Run;
  /** Items stored before the run (an earlier run of its session). */
  before: Write[];
  writes: Write[];
}

/** A small deterministic random source (mulberry32). */
export function randomSource(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T,
  };
}
type Random = ReturnType<typeof randomSource>;

const texts = ['Let me look.', 'Done: "a.md" has 3 lines.\n- one\n- two', 'Écrit ✓ — 😀', 'Plan first, then write.', 'ok', 'Reading the file…', 'x'];

function jsonValue(r: Random, depth = 0): unknown {
  const kind = r.int(0, depth > 1 ? 3 : 5);
  if (kind === 0) return r.pick(['a.md', 'say "hi"\n', 'ü/\\', '']);
  if (kind === 1) return r.pick([0, 2, -3.5, 1e21, 12345]);
  if (kind === 2) return r.pick([true, false, null]);
  if (kind === 3) return r.pick(['src/x.ts', 'plain']);
  if (kind === 4) return Array.from({ length: r.int(0, 3) }, () => jsonValue(r, depth + 1));
  return Object.fromEntries(Array.from({ length: r.int(0, 3) }, (_, i) => [r.pick(['path', 'content', 'n', 'é', 'q"k'] as const) + i, jsonValue(r, depth + 1)]));
}

/** Splits a text into 1-4 pieces at random places (a surrogate pair may be split, as a byte stream can). */
function pieces(r: Random, text: string): string[] {
  const cuts = [...new Set(Array.from({ length: r.int(0, 3) }, () => r.int(0, text.length)))].sort((a, b) => a - b);
  const out: string[] = [];
  let at = 0;
  for (const cut of [...cuts, text.length]) {
    out.push(text.slice(at, cut));
    at = cut;
  }
  return out;
}

export interface ScenarioOptions {
  mode?: Run['mode'];
  /** @default 'run-1' */
  runId?: string;
  /** Chance that the run is cut (cancelled or failed) at a random write. @default 0.3 */
  cut?: number;
}

/**
 * A run's writes in the order the steps make them: per inference step the user message, the
 * live attempts' flushes, the answer, the usage on the run record; per call its approval (open,
 * decide) and result, the calls of a turn interleaved as a Map runs them; phases, plan and end
 * on the run record. Sometimes cut short by a cancel or a failure, after which nothing is written.
 */
export function scenario(seed: number, options: ScenarioOptions = {}): Scenario {
  const r = randomSource(seed);
  const mode = options.mode ?? (r.chance(0.4) ? 'multi' : 'single');
  const runId = options.runId ?? 'run-1';
  const session = mode === 'single' && r.chance(0.4) ? `${runId}-chat` : undefined;
  const gatedTools = r.chance(0.5) ? ['write_file'] : [];
  let tick = 0;
  const at = () => new Date(Date.UTC(2026, 0, 1) + ++tick * 1000).toISOString();
  const created = at();
  const run: Run = {
    runId,
    mode,
    goal: 'Write "a.md" ✓',
    ...(session ? { sessionId: session } : {}),
    ...(gatedTools.length ? { approvals: { tools: gatedTools } } : {}),
    status: 'running',
    phase: 'idle',
    iterations: {},
    usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    createdAt: created,
    updatedAt: created,
  };
  const writes: Write[] = [];
  const before: Write[] = [];
  const updateRun = (patch: (run: Run) => void) => {
    const when = at();
    writes.push((w) => {
      patch(w.run);
      w.run.updatedAt = when;
    });
  };
  const putMessage = (target: Write[], conversation: string, seq: number, role: 'user' | 'assistant', content: ContentBlock[], meta: MessageMeta) =>
    target.push((w) => void w.conversation(conversation).set(messageKey(seq), { kind: 'message', seq, role, content, meta }));
  const putResult = (target: Write[], conversation: string, seq: number, index: number, toolUseId: string, content: string, isError: boolean, ran: boolean) =>
    target.push(
      (w) =>
        void w.conversation(conversation).set(resultKey(seq, index), {
          kind: 'result',
          seq,
          index,
          result: { type: 'tool_result', tool_use_id: toolUseId, content, ...(isError ? { is_error: true } : {}) },
          ...(ran ? {} : { ran: false }),
        }),
    );

  let attemptClock = 1_767_225_600_000;
  const attemptId = () => `${String(++attemptClock).padStart(13, '0')}-${r.int(0, 36 ** 6 - 1).toString(36).padStart(6, '0')}`;
  /** An attempt's flushes: the item written whole, each time with more chunks. */
  const stream = (agent: AgentName, seq: number, chunks: LiveChunk[]) => {
    const attempt = attemptId();
    const key = `${agent}#${seqKey(seq)}#${attempt}`;
    const flushes = [...new Set([r.int(1, Math.max(1, chunks.length)), chunks.length])].sort((a, b) => a - b);
    for (const upTo of flushes) {
      const item: LiveAttempt = { runId, agent, seq, attempt, chunks: chunks.slice(0, upTo), updatedAt: at() };
      writes.push((w) => void w.live.set(key, structuredClone(item)));
    }
  };
  /** The chunks a model call writing `content` streams (tool inputs as the model's own JSON text). */
  const chunksOf = (content: ContentBlock[], modelJson: Map<string, string>): LiveChunk[] =>
    content.flatMap((block, index): LiveChunk[] => {
      if (block.type === 'text') return pieces(r, block.text as string).map((delta) => ({ block: index, kind: 'text', delta }));
      if (block.type === 'tool_use') {
        const { id, name } = block as { id: string; name: string };
        return pieces(r, modelJson.get(id) ?? '{}').map((delta) => ({ block: index, kind: 'tool_use', id, name, delta }));
      }
      return [];
    });

  if (session) {
    // An earlier run of the session: a tool turn and an answer.
    const conversation = conversationIdOf(runId, 'single', session);
    const meta = { runId: 'run-0', iteration: 0 };
    putMessage(before, conversation, 0, 'user', [{ type: 'text', text: 'Earlier.' }], meta);
    putMessage(before, conversation, 1, 'assistant', [{ type: 'tool_use', id: 'toolu_old', name: 'calculator', input: { a: 1 } }], { ...meta, stopReason: 'tool_use' });
    putResult(before, conversation, 1, 0, 'toolu_old', '2', false, true);
    putMessage(before, conversation, 2, 'user', [], { runId: 'run-0', iteration: 1 });
    putMessage(before, conversation, 3, 'assistant', [{ type: 'text', text: 'Old answer.' }], { runId: 'run-0', iteration: 1, stopReason: 'end_turn' });
  }

  let calls = 0;
  const agentTurns = (agent: AgentName, last: 'answer' | 'plan') => {
    const conversation = conversationIdOf(runId, agent, session);
    let seq = session ? 4 : 0;
    putMessage(writes, conversation, seq++, 'user', [{ type: 'text', text: 'goal' }], { runId, iteration: 0 });
    const turns = r.int(1, 3);
    for (let turn = 0; turn < turns; turn++) {
      const final = turn === turns - 1;
      const content: ContentBlock[] = [];
      const modelJson = new Map<string, string>();
      if (r.chance(0.15)) content.push({ type: 'thinking', thinking: 'hmm', signature: 'sig' });
      if (!final || last === 'answer' || r.chance(0.5)) content.push({ type: 'text', text: r.pick(texts) });
      const useCount = final ? (last === 'plan' ? 1 : 0) : r.int(1, 3);
      for (let i = 0; i < useCount; i++) {
        const id = `toolu_${++calls}`;
        const name = final ? 'finish_plan' : r.pick(['calculator', 'write_file', 'read_file']);
        const input = name === 'finish_plan' ? { goal: 'g', steps: [{ description: 'd', action: 'a' }] } : (jsonValue(r) as object);
        const inputObject = typeof input === 'object' && input !== null && !Array.isArray(input) ? input : { value: input };
        modelJson.set(id, JSON.stringify(inputObject, null, r.pick([undefined, 1])));
        content.push({ type: 'tool_use', id, name, input: inputObject });
      }
      if (r.chance(0.1) && content.at(-1)?.type === 'text') content.push({ type: 'text', text: 'More.' });
      const cutOff = useCount > 0 && !final && r.chance(0.1);
      // A call cut off by max_tokens: the model's JSON ends early, the stored input is what could be read.
      if (cutOff) {
        const lastUse = content.at(-1) as { id: string; input: unknown };
        const json = modelJson.get(lastUse.id) as string;
        modelJson.set(lastUse.id, json.slice(0, Math.floor(json.length / 2)));
        lastUse.input = {};
      }
      // Abandoned attempts (a retried model call), then the one that answers (or a fast one that streams nothing).
      for (let k = r.chance(0.25) ? r.int(1, 2) : 0; k > 0; k--) {
        const junk: ContentBlock[] = [{ type: 'text', text: r.pick(texts) }];
        if (r.chance(0.5)) junk.push({ type: 'tool_use', id: `toolu_junk_${++calls}`, name: 'read_file', input: { path: 'x' } });
        stream(agent, seq, chunksOf(junk, new Map([[`toolu_junk_${calls}`, '{"path": "x"}']])));
      }
      if (r.chance(0.7)) {
        const chunks = chunksOf(content, modelJson);
        // Sometimes only the first part streams (the size cap), or the attempt differs (a race lost).
        stream(agent, seq, r.chance(0.2) ? chunks.slice(0, r.int(0, chunks.length)) : r.chance(0.1) ? [{ block: 0, kind: 'text', delta: 'Something else' }] : chunks);
      }
      const stopReason = cutOff ? 'max_tokens' : useCount > 0 ? 'tool_use' : 'end_turn';
      const usage = { inputTokens: 10 * seq, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
      putMessage(writes, conversation, seq, 'assistant', content, { runId, iteration: turn, stopReason, usage, model: 'claude-sonnet-4-5' });
      updateRun((run) => {
        run.iterations[agent] = turn + 1;
        run.usage.inputTokens += usage.inputTokens;
        run.usage.outputTokens += usage.outputTokens;
        if (final && last === 'answer') run.result = { response: 'done', actionsTaken: [] };
      });
      if (useCount === 0) break;
      // The calls run in parallel: each one's writes in order, all of them interleaved.
      const uses = toolUses({ content });
      const lanes = uses.map((use, index) => {
        const lane: Write[] = [];
        const gatedCall = gatedTools.includes(use.name);
        const deny = gatedCall && r.chance(0.4);
        if (cutOff && index === uses.length - 1) {
          // Never run: the next step answers it.
          putResult(lane, conversation, seq, index, use.id, 'The call was cut off (max_tokens).', true, false);
          return lane;
        }
        if (gatedCall) {
          const requestedAt = at();
          const decidedAt = at();
          lane.push((w) =>
            void w.approvals.set(use.id, { runId, toolUseId: use.id, agent, conversationId: conversation, seq, name: use.name, input: use.input, requestedAt }),
          );
          lane.push((w) => {
            const approval = w.approvals.get(use.id) as Approval;
            Object.assign(approval, { decision: deny ? 'deny' : 'approve', decidedAt, decidedBy: 'rita', ...(deny ? { reason: 'no' } : {}) });
          });
        }
        if (use.name === 'finish_plan') updateRunInto(lane, at(), (run) => void (run.plan = { goal: 'g', steps: [{ description: 'd', action: 'a' }] }));
        putResult(lane, conversation, seq, index, use.id, deny ? 'A reviewer denied this tool call.' : `result of ${use.id}`, deny || r.chance(0.1), !deny);
        return lane;
      });
      while (lanes.some((lane) => lane.length)) {
        const open = lanes.filter((lane) => lane.length);
        writes.push(r.pick(open).shift() as Write);
      }
      if (final) break;
      putMessage(writes, conversation, seq + 1, 'user', [], { runId, iteration: turn + 1 });
      seq += 2;
    }
  };

  if (mode === 'single') {
    updateRun((run) => Object.assign(run, { phase: 'executing', currentAgent: 'single' }));
    agentTurns('single', 'answer');
  } else {
    updateRun((run) => Object.assign(run, { phase: 'planning', currentAgent: 'architect' }));
    agentTurns('architect', 'plan');
    updateRun((run) => Object.assign(run, { phase: 'executing', currentAgent: 'coder' }));
    agentTurns('coder', 'answer');
  }

  const end = at();
  if (r.chance(options.cut ?? 0.3)) {
    writes.splice(r.int(0, writes.length));
    const cancelled = r.chance(0.5);
    writes.push((w) => {
      const { currentAgent, ...rest } = w.run;
      w.run = cancelled
        ? { ...rest, status: 'cancelled', phase: 'cancelled', updatedAt: end }
        : { ...rest, status: 'failed', phase: 'failed', error: { code: 'ExecutionAborted', message: 'Stopped.', ...(currentAgent ? { agent: currentAgent } : {}) }, updatedAt: end };
    });
  } else {
    writes.push((w) => {
      const { currentAgent: _agent, ...rest } = w.run;
      w.run = { ...rest, status: 'succeeded', phase: 'complete', updatedAt: end };
    });
  }
  return { run, before, writes };
}

function updateRunInto(lane: Write[], when: string, patch: (run: Run) => void): void {
  lane.push((w) => {
    patch(w.run);
    w.run.updatedAt = when;
  });
}

/** A world with the scenario's earlier items stored and its writes pending. */
export function worldOf(s: Scenario): World {
  const world = new World(s.run);
  for (const write of s.before) write(world);
  world.pending = [...s.writes];
  return world;
}

// ---------------------------------------------------------------------------------------------
// Well-formed AG-UI
// ---------------------------------------------------------------------------------------------

/**
 * What is wrong with a stream as AG-UI: every event valid by `@ag-ui/core`'s schema; one run,
 * RUN_STARTED first and RUN_FINISHED/RUN_ERROR last; text messages and tool calls started once,
 * their content between start and end, all ended; steps paired; each result answers a call that
 * ended, once. Empty when nothing is.
 */
export function aguiProblems(events: AGUIEvent[]): string[] {
  const problems: string[] = [];
  const openText = new Set<string>();
  const doneText = new Set<string>();
  const openTool = new Set<string>();
  const doneTool = new Set<string>();
  const resulted = new Set<string>();
  const steps: string[] = [];
  events.forEach((event, i) => {
    const at = `#${i} ${event.type}`;
    const parsed = EventSchema.safeParse(event);
    if (!parsed.success) problems.push(`${at}: ${parsed.error.issues.map((x) => `${x.path.join('.')} ${x.message}`).join('; ')}`);
    if (i === 0 && event.type !== EventType.RUN_STARTED) problems.push(`${at}: the first event is not RUN_STARTED`);
    const terminal = event.type === EventType.RUN_FINISHED || event.type === EventType.RUN_ERROR;
    if (terminal !== (i === events.length - 1)) problems.push(`${at}: ${terminal ? 'ends the run before its last event' : 'the last event does not end the run'}`);
    switch (event.type) {
      case EventType.RUN_STARTED:
        if (i !== 0) problems.push(`${at}: a second RUN_STARTED`);
        break;
      case EventType.TEXT_MESSAGE_START:
        if (openText.has(event.messageId) || doneText.has(event.messageId)) problems.push(`${at}: ${event.messageId} started twice`);
        openText.add(event.messageId);
        break;
      case EventType.TEXT_MESSAGE_CONTENT:
        if (!openText.has(event.messageId)) problems.push(`${at}: content of ${event.messageId}, which is not open`);
        if (event.delta === '') problems.push(`${at}: an empty delta`);
        break;
      case EventType.TEXT_MESSAGE_END:
        if (!openText.delete(event.messageId)) problems.push(`${at}: end of ${event.messageId}, which is not open`);
        doneText.add(event.messageId);
        break;
      case EventType.TOOL_CALL_START:
        if (openTool.has(event.toolCallId) || doneTool.has(event.toolCallId)) problems.push(`${at}: ${event.toolCallId} started twice`);
        openTool.add(event.toolCallId);
        break;
      case EventType.TOOL_CALL_ARGS:
        if (!openTool.has(event.toolCallId)) problems.push(`${at}: args of ${event.toolCallId}, which is not open`);
        if (event.delta === '') problems.push(`${at}: an empty delta`);
        break;
      case EventType.TOOL_CALL_END:
        if (!openTool.delete(event.toolCallId)) problems.push(`${at}: end of ${event.toolCallId}, which is not open`);
        doneTool.add(event.toolCallId);
        break;
      case EventType.TOOL_CALL_RESULT:
        if (!doneTool.has(event.toolCallId)) problems.push(`${at}: a result for ${event.toolCallId}, which has not ended`);
        if (resulted.has(event.toolCallId)) problems.push(`${at}: a second result for ${event.toolCallId}`);
        resulted.add(event.toolCallId);
        break;
      case EventType.STEP_STARTED:
        if (steps.length) problems.push(`${at}: ${event.stepName} starts inside ${steps.join(', ')}`);
        steps.push(event.stepName);
        break;
      case EventType.STEP_FINISHED:
        if (steps.pop() !== event.stepName) problems.push(`${at}: ${event.stepName} finishes without having started`);
        break;
      default:
        break;
    }
    if (terminal && (openText.size || openTool.size || steps.length)) problems.push(`${at}: the run ends with ${[...openText, ...openTool, ...steps].join(', ')} open`);
  });
  return problems;
}
