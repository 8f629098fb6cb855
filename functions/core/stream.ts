/**
 * The event stream of a run, derived from what is stored: the run record, this run's messages
 * and tool results in each agent's conversation, the approvals, and the live attempts
 * (docs/ARCHITECTURE.md, "The event stream").
 *
 * `deriveRunEvents` is a pure function of what has been read so far. It emits only events that no
 * later read can put anything before: when the store grows, the events derived from it grow by
 * appending; they are never changed or reordered. So every watcher, every reconnect and every
 * process derives the same sequence, and each event's cursor (its position in that sequence)
 * means the same everywhere. The reader (`stream-reader.ts`) keeps the read order that makes
 * "what has been read" safe to derive from.
 */
import {
  type AGUIEvent,
  type CustomEvent,
  EventType,
  type RunErrorEvent,
  type RunFinishedEvent,
  type TextMessageContentEvent,
  type TextMessageEndEvent,
  type TextMessageStartEvent,
  type ToolCallArgsEvent,
  type ToolCallEndEvent,
  type ToolCallStartEvent,
} from '@ag-ui/core';
import { type Approval, notesOf } from './approvals.js';
import { completeJson } from './json-prefix.js';
import type { LiveAttempt } from './live.js';
import { type ContentBlock, type Role, type ToolResultBlock, isText, isToolUse, toolUses } from './messages.js';
import type { MessageMeta } from './conversation.js';
import type { AgentName } from './names.js';
import { agentPhases } from './phases.js';
import { estimateCost } from './prices.js';
import { InvalidCursor, type Run } from './runs.js';

/** One event of a run's stream and its cursor (the SSE `id`). */
export interface PositionedEvent {
  cursor: string;
  event: AGUIEvent;
}

/** A message of this run, as the stream reads it. */
export interface StreamMessage {
  role: Role;
  content: ContentBlock[];
  meta: MessageMeta;
}

/** A stored tool result and whether its call ran. */
export interface StreamResult {
  result: ToolResultBlock;
  ran: boolean;
}

/** What has been read of one agent's conversation and live attempts. */
export interface AgentView {
  /** Reading began at message `fromSeq`: a resumed stream reads from where it left off. */
  fromSeq: number;
  /** This run's messages (both roles) by seq. */
  messages: Map<number, StreamMessage>;
  /** Tool results by the seq of the assistant message whose calls they answer, by call position. */
  results: Map<number, (StreamResult | undefined)[]>;
  /** Live attempts by seq, oldest attempt first. */
  attempts: Map<number, LiveAttempt[]>;
  /**
   * Attempts read again after a later attempt of the same seq was seen: their writer had stopped
   * (a retry starts after the call before it ended), so nothing will be added to them.
   */
  finalAttempts: Set<string>;
  /**
   * Live attempts of every seq below this have been read after the conversation showed that
   * seq's answer (or a later message) stored: nothing about them can change any more.
   */
  liveSettledTo: number;
  /** The live attempts were read in the latest read of this conversation (after the run record in `StreamState.run`). */
  liveFresh: boolean;
}

/** What the stream derives from. */
export interface StreamState {
  /** The run record as read BEFORE the conversations: if it says the run ended, everything the run stored is in `agents`. */
  run: Run;
  /** The run's approvals as read AFTER the conversations: a result without an approval here was never gated. */
  approvals: ReadonlyMap<string, Approval>;
  /** An agent is absent until its conversation has been read. */
  agents: Partial<Record<AgentName, AgentView>>;
}

/** Why the derivation stopped, and what to read for it to go on. */
export type Wait =
  /** Read this agent's conversation (and live attempts when they can change), and the run partition. */
  | { agent: AgentName; decisionOnly: false }
  /** Only a reviewer's decision (or the run's end) can move the stream: the run partition is enough. */
  | { agent: AgentName; decisionOnly: true };

export interface Derivation {
  events: PositionedEvent[];
  /** The run's last event (RUN_FINISHED or RUN_ERROR) is among the events. */
  done: boolean;
  /** Absent when done. */
  wait?: Wait;
}

/** The agents of a run, in the order they work. */
export function agentsOf(mode: Run['mode']): AgentName[] {
  return mode === 'single' ? ['single'] : ['architect', 'coder'];
}

// ---------------------------------------------------------------------------------------------
// Positions and cursors
// ---------------------------------------------------------------------------------------------

/**
 * Where an event stands in the sequence: its group, and its place in the group. Groups, in order:
 * the run's header; per agent its opening, one group per slot (an assistant message, with its live
 * attempts, its tool calls and their results), its closing; the end.
 */
export type Group =
  | { kind: 'header' }
  | { kind: 'open'; agent: number }
  | { kind: 'slot'; agent: number; seq: number }
  | { kind: 'close'; agent: number }
  | { kind: 'end' };

export interface Position {
  group: Group;
  n: number;
}

function rank(group: Group): [number, number] {
  switch (group.kind) {
    case 'header':
      return [0, 0];
    case 'open':
      return [1 + group.agent, -1];
    case 'slot':
      return [1 + group.agent, group.seq];
    case 'close':
      return [1 + group.agent, Number.POSITIVE_INFINITY];
    case 'end':
      return [Number.POSITIVE_INFINITY, 0];
  }
}

/** Orders positions as their events are ordered. */
export function comparePositions(a: Position, b: Position): number {
  const [a1, a2] = rank(a.group);
  const [b1, b2] = rank(b.group);
  return a1 - b1 || a2 - b2 || a.n - b.n;
}

/**
 * A position as a cursor: `h.<n>`, `<agent>.o.<n>`, `<agent>.<seq>.<n>`, `<agent>.c.<n>`, `e.<n>`.
 * Opaque to clients; structured so that a resumed stream reads only from the slot it resumes in.
 */
export function encodeCursor(position: Position, agents: readonly AgentName[]): string {
  const { group, n } = position;
  switch (group.kind) {
    case 'header':
      return `h.${n}`;
    case 'end':
      return `e.${n}`;
    case 'open':
      return `${agents[group.agent]}.o.${n}`;
    case 'close':
      return `${agents[group.agent]}.c.${n}`;
    case 'slot':
      return `${agents[group.agent]}.${group.seq}.${n}`;
  }
}

const maxSeq = 9_999_999_999;

/** The position a cursor names in a run with these agents; `InvalidCursor` for anything else. */
export function parseCursor(cursor: string, agents: readonly AgentName[]): Position {
  const invalid = () => new InvalidCursor('The cursor is not one this run\'s event stream gave (use the id of an event you received).');
  const parts = cursor.split('.');
  const number = (text: string | undefined, max: number) => {
    if (text === undefined || !/^(0|[1-9]\d{0,9})$/.test(text) || Number(text) > max) throw invalid();
    return Number(text);
  };
  if (cursor.length > 64) throw invalid();
  if (parts.length === 2 && (parts[0] === 'h' || parts[0] === 'e')) {
    return { group: { kind: parts[0] === 'h' ? 'header' : 'end' }, n: number(parts[1], 1_000_000) };
  }
  if (parts.length !== 3) throw invalid();
  const agent = agents.indexOf(parts[0] as AgentName);
  if (agent < 0) throw invalid();
  const n = number(parts[2], 10_000_000);
  if (parts[1] === 'o') return { group: { kind: 'open', agent }, n };
  if (parts[1] === 'c') return { group: { kind: 'close', agent }, n };
  return { group: { kind: 'slot', agent, seq: number(parts[1], maxSeq) }, n };
}

// ---------------------------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------------------------

/** The ids a message's events carry: text messages per block, and the assistant message as a whole. */
interface MessageIds {
  /** The assistant message: the parent of its tool calls when no text block comes before them. */
  message: string;
  text(block: number): string;
}

/**
 * `<runId>:<agent>:<seq>` (`:<block>` for a text block): the first live attempt of a message, and
 * the stored message when it continues that attempt or nothing streamed. A later attempt (a
 * retried model call) appends its attempt (`:<block>:<attempt>`), and the stored message carries
 * the ids of the attempt it continues; a stored message that continues none after attempts were
 * streamed appends `:final`.
 */
function idsOf(run: Run, agent: AgentName, seq: number, suffix?: string): MessageIds {
  const base = `${run.runId}:${agent}:${seq}`;
  return suffix === undefined
    ? { message: base, text: (block) => `${base}:${block}` }
    : { message: `${base}:${suffix}`, text: (block) => `${base}:${block}:${suffix}` };
}

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

function custom(name: string, value: Record<string, unknown>): CustomEvent {
  return { type: EventType.CUSTOM, name: `stepwise.${name}`, value };
}

function textStart(messageId: string): TextMessageStartEvent {
  return { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' };
}

function textContent(messageId: string, delta: string): TextMessageContentEvent {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta };
}

function textEnd(messageId: string): TextMessageEndEvent {
  return { type: EventType.TEXT_MESSAGE_END, messageId };
}

function toolStart(toolCallId: string, toolCallName: string, parentMessageId: string): ToolCallStartEvent {
  return { type: EventType.TOOL_CALL_START, toolCallId, toolCallName, parentMessageId };
}

function toolArgs(toolCallId: string, delta: string): ToolCallArgsEvent {
  return { type: EventType.TOOL_CALL_ARGS, toolCallId, delta };
}

function toolEnd(toolCallId: string): ToolCallEndEvent {
  return { type: EventType.TOOL_CALL_END, toolCallId };
}

/** Collects events with their positions, group by group. */
class Sequence {
  readonly events: PositionedEvent[] = [];

  constructor(private readonly agents: readonly AgentName[]) {}

  group(group: Group): (event: AGUIEvent) => void {
    let n = 0;
    return (event) => {
      this.events.push({ cursor: encodeCursor({ group, n: n++ }, this.agents), event });
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Live attempts
// ---------------------------------------------------------------------------------------------

/** A content block that a live attempt opened, and what streamed of it. */
type OpenBlock =
  | { kind: 'text'; messageId: string; text: string; closed: boolean }
  | { kind: 'tool_use'; id: string; name: string; json: string; closed: boolean };

/** The events of a live attempt's chunks, and the blocks they opened. */
interface AttemptForm {
  events: AGUIEvent[];
  blocks: Map<number, OpenBlock>;
}

/**
 * The events of an attempt's chunks, in the order they were written: a block starts at its first
 * chunk with something in it (a tool call at its first chunk), and when a later block starts, the
 * blocks before it are complete and end. A chunk that contradicts what came before (an earlier
 * block after a later one, another kind or call id) is ignored.
 */
function attemptForm(attempt: LiveAttempt, ids: MessageIds): AttemptForm {
  const events: AGUIEvent[] = [];
  const blocks = new Map<number, OpenBlock>();
  let highest = -1;
  let firstText: string | undefined;
  for (const chunk of attempt.chunks) {
    const open = blocks.get(chunk.block);
    if (open) {
      if (open.closed || open.kind !== chunk.kind || (open.kind === 'tool_use' && chunk.kind === 'tool_use' && open.id !== chunk.id)) continue;
    } else {
      if (chunk.block < highest || (chunk.kind === 'text' && chunk.delta === '')) continue;
      closeBlocks(blocks, events);
      highest = chunk.block;
      if (chunk.kind === 'text') {
        const messageId = ids.text(chunk.block);
        firstText ??= messageId;
        blocks.set(chunk.block, { kind: 'text', messageId, text: '', closed: false });
        events.push(textStart(messageId));
      } else {
        blocks.set(chunk.block, { kind: 'tool_use', id: chunk.id, name: chunk.name, json: '', closed: false });
        events.push(toolStart(chunk.id, chunk.name, firstText ?? ids.message));
      }
    }
    const block = blocks.get(chunk.block) as OpenBlock;
    if (chunk.delta === '') continue;
    if (block.kind === 'text') {
      block.text += chunk.delta;
      events.push(textContent(block.messageId, chunk.delta));
    } else {
      block.json += chunk.delta;
      events.push(toolArgs(block.id, chunk.delta));
    }
  }
  return { events, blocks };
}

/** Ends every block still open, in block order. */
function closeBlocks(blocks: Map<number, OpenBlock>, events: AGUIEvent[]): void {
  for (const index of [...blocks.keys()].sort((a, b) => a - b)) {
    const block = blocks.get(index) as OpenBlock;
    if (block.closed) continue;
    block.closed = true;
    events.push(block.kind === 'text' ? textEnd(block.messageId) : toolEnd(block.id));
  }
}

/**
 * How the stored message completes the attempt, block by block (the rest of each open block),
 * or `undefined` when the stored message is not what the attempt was writing.
 */
function continuation(form: AttemptForm, message: StreamMessage): Map<number, string> | undefined {
  const rests = new Map<number, string>();
  const lastOpened = Math.max(...form.blocks.keys());
  for (const [index, open] of form.blocks) {
    const block = message.content[index];
    if (open.kind === 'text') {
      if (!block || !isText(block) || !block.text.startsWith(open.text)) return undefined;
      const rest = block.text.slice(open.text.length);
      if (open.closed && rest !== '') return undefined;
      rests.set(index, rest);
      continue;
    }
    if (!block || !isToolUse(block) || block.id !== open.id || block.name !== open.name) return undefined;
    let rest = completeJson(open.json, block.input ?? {});
    // A call cut off by max_tokens keeps the JSON the model wrote; the stored input is what could be read of it.
    if (rest === undefined && message.meta.stopReason === 'max_tokens' && index === lastOpened) rest = '';
    if (rest === undefined || (open.closed && rest !== '')) return undefined;
    rests.set(index, rest);
  }
  return rests;
}

// ---------------------------------------------------------------------------------------------
// The derivation
// ---------------------------------------------------------------------------------------------

/** The stream's events from what has been read (see the module comment). */
export function deriveRunEvents(state: StreamState): Derivation {
  const { run } = state;
  const agents = agentsOf(run.mode);
  const sequence = new Sequence(agents);
  const terminal = run.status !== 'running';
  const threadId = run.sessionId ?? run.runId;
  const waiting = (wait: Wait): Derivation => ({ events: sequence.events, done: false, wait });

  const header = sequence.group({ kind: 'header' });
  header({ type: EventType.RUN_STARTED, threadId, runId: run.runId });
  header(
    custom('run', {
      runId: run.runId,
      mode: run.mode,
      goal: run.goal,
      ...(run.sessionId ? { sessionId: run.sessionId } : {}),
      createdAt: run.createdAt,
    }),
  );

  // The Architect's part is over once it handed over to the Coder: the orchestrator records
  // that as the phase (which moves on from there only to the run's end).
  const handedOver = run.phase === 'executing' || run.phase === 'complete' || run.status === 'succeeded';
  for (let k = 0; k < agents.length; k++) {
    const agent = agents[k] as AgentName;
    const view = state.agents[agent];
    const last = k === agents.length - 1;
    if (k > 0) {
      // A later agent's step starts with its first message: a run that ends before it has none.
      if (!view) return waiting({ agent, decisionOnly: false });
      if (view.messages.size === 0 && view.attempts.size === 0) {
        if (terminal) break;
        return waiting({ agent, decisionOnly: false });
      }
    }
    const open = sequence.group({ kind: 'open', agent: k });
    open({ type: EventType.STEP_STARTED, stepName: agent });
    if (run.mode === 'multi') open(custom('phase', { phase: agentPhases[agent], agent }));
    if (!view) return waiting({ agent, decisionOnly: false });

    const over = last ? terminal : terminal || handedOver;
    const slots = [...new Set([...[...view.messages].filter(([, m]) => m.role === 'assistant').map(([seq]) => seq), ...view.attempts.keys()])].sort(
      (a, b) => a - b,
    );
    for (const seq of slots) {
      // An answer being written is shown only once the message it answers has been read: a live
      // attempt can be read before the messages before it (the attempts are read after the
      // conversation, and the conversation may have grown in between), and nothing may come
      // before it later.
      // (A resumed stream does not read what it left behind; a section that is over has been read whole.)
      const prompted = view.messages.has(seq) || view.messages.has(seq - 1) || seq - 1 < view.fromSeq || over;
      if (!prompted) return waiting({ agent, decisionOnly: false });
      const wait = deriveSlot(sequence.group({ kind: 'slot', agent: k, seq }), { state, agent, view, seq, over });
      if (wait) return waiting(wait);
    }
    if (!over) return waiting({ agent, decisionOnly: false });
    const close = sequence.group({ kind: 'close', agent: k });
    if (agent === 'architect' && run.plan) close(custom('plan', { plan: run.plan }));
    close({ type: EventType.STEP_FINISHED, stepName: agent });
  }

  // The last agent's step closes only once the run has ended: here the run has.
  const end = sequence.group({ kind: 'end' });
  end(
    custom('run_ended', {
      status: run.status,
      phase: run.phase,
      ...(run.error ? { error: run.error } : {}),
      usage: run.usage,
      estimatedCostUsd: run.estimatedCostUsd ?? 0,
      ...(run.result ? { result: run.result } : {}),
    }),
  );
  if (run.status === 'failed') {
    end({ type: EventType.RUN_ERROR, message: run.error?.message ?? 'The run failed.', code: run.error?.code ?? 'RunFailed' } satisfies RunErrorEvent);
  } else if (run.status === 'cancelled') {
    end({ type: EventType.RUN_FINISHED, threadId, runId: run.runId, outcome: { type: 'cancelled' } } satisfies RunFinishedEvent);
  } else {
    end({ type: EventType.RUN_FINISHED, threadId, runId: run.runId, ...(run.result ? { result: run.result } : {}) } satisfies RunFinishedEvent);
  }
  return { events: sequence.events, done: true };
}

interface SlotContext {
  state: StreamState;
  agent: AgentName;
  view: AgentView;
  seq: number;
  /** The agent's section is over (the run ended, or the agent handed over): nothing more comes. */
  over: boolean;
}

/**
 * The events of one slot: the message's abandoned live attempts, the message (its live text and
 * the rest), its usage, then its calls in call order, each with its approval and result.
 * `undefined` when the slot is complete; else what it waits for.
 */
function deriveSlot(emit: (event: AGUIEvent) => void, context: SlotContext): Wait | undefined {
  const { state, agent, view, seq, over } = context;
  const { run } = state;
  const stored = view.messages.get(seq);
  const message = stored?.role === 'assistant' ? stored : undefined;
  const attempts = view.attempts.get(seq) ?? [];
  const settled = seq < view.liveSettledTo;
  const read = { agent, decisionOnly: false } as const;
  // A stored answer is shown only once its live attempts were read after it: they are final then.
  if (message && !settled) return read;

  const abandon = (form: AttemptForm, ids: MessageIds, attempt: LiveAttempt) => {
    for (const event of form.events) emit(event);
    const tail: AGUIEvent[] = [];
    closeBlocks(form.blocks, tail);
    for (const event of tail) emit(event);
    emit(custom('attempt_abandoned', { messageId: ids.message, agent, seq, attempt: attempt.attempt }));
  };
  const attemptIds = (index: number, attempt: LiveAttempt) => idsOf(run, agent, seq, index === 0 ? undefined : attempt.attempt);
  for (const [index, attempt] of attempts.slice(0, -1).entries()) {
    const ids = attemptIds(index, attempt);
    const form = attemptForm(attempt, ids);
    // Not read since a later attempt appeared: its last flush may not have been in that read.
    if (!settled && !view.finalAttempts.has(attempt.attempt)) {
      for (const event of form.events) emit(event);
      return read;
    }
    abandon(form, ids, attempt);
  }

  const latest = attempts.at(-1);
  if (!message) {
    if (!latest) return undefined;
    const ids = attemptIds(attempts.length - 1, latest);
    const form = attemptForm(latest, ids);
    // Another message took this place, or the section ended without this answer: it was abandoned.
    const later = settled && [...view.messages.keys()].some((other) => other >= seq);
    if (later || (over && view.liveFresh)) {
      abandon(form, ids, latest);
      return undefined;
    }
    for (const event of form.events) emit(event);
    return read;
  }

  if (!latest) {
    storedBlocks(emit, message, idsOf(run, agent, seq), new Map());
  } else {
    const ids = attemptIds(attempts.length - 1, latest);
    const form = attemptForm(latest, ids);
    const rests = continuation(form, message);
    if (rests) {
      for (const event of form.events) emit(event);
      storedBlocks(emit, message, ids, form.blocks, rests);
    } else {
      abandon(form, ids, latest);
      storedBlocks(emit, message, idsOf(run, agent, seq, 'final'), new Map());
    }
  }
  const { usage, model } = message.meta;
  if (usage) {
    const cost = estimateCost(model ?? '', usage);
    emit(custom('usage', { agent, seq, usage, ...(model ? { model } : {}), ...(cost === undefined ? {} : { estimatedCostUsd: cost }) }));
  }
  return calls(emit, context, message);
}

/**
 * The stored message's blocks after what streamed live: the rest of each open block and its
 * end, then every block that did not stream, whole. Thinking and other blocks are not shown.
 */
function storedBlocks(
  emit: (event: AGUIEvent) => void,
  message: StreamMessage,
  ids: MessageIds,
  streamed: Map<number, OpenBlock>,
  rests: Map<number, string> = new Map(),
): void {
  // The parent of a call: the first text block before it, streamed or not.
  const parentOf = (index: number) => {
    const text = message.content.findIndex((b, i) => i < index && isText(b) && b.text !== '');
    return text >= 0 ? ids.text(text) : ids.message;
  };
  message.content.forEach((block, index) => {
    const open = streamed.get(index);
    if (open) {
      if (open.closed) return;
      open.closed = true;
      const rest = rests.get(index) ?? '';
      if (open.kind === 'text') {
        if (rest) emit(textContent(open.messageId, rest));
        emit(textEnd(open.messageId));
      } else {
        if (rest) emit(toolArgs(open.id, rest));
        emit(toolEnd(open.id));
      }
      return;
    }
    if (isText(block) && block.text !== '') {
      const messageId = ids.text(index);
      emit(textStart(messageId));
      emit(textContent(messageId, block.text));
      emit(textEnd(messageId));
    } else if (isToolUse(block)) {
      emit(toolStart(block.id, block.name, parentOf(index)));
      emit(toolArgs(block.id, JSON.stringify(block.input ?? {})));
      emit(toolEnd(block.id));
    }
  });
}

/**
 * A message's calls, in two passes, each in call order. First the approval requests, so every
 * call that waits for a reviewer at once is shown waiting at once: a call with an approval record
 * is requested, a call with a result and no record was never gated (the approvals are read after
 * the conversation, so a gated call's record is seen with its result), and a call with neither
 * yet holds the pass. Then the outcomes: a call's decision and its result, each call waiting for
 * the result of the one before it.
 */
function calls(emit: (event: AGUIEvent) => void, context: SlotContext, message: StreamMessage): Wait | undefined {
  const { state, agent, view, seq, over } = context;
  const results = view.results.get(seq) ?? [];
  const base = `${state.run.runId}:${agent}:${seq}`;
  const uses = toolUses(message);
  for (const [index, call] of uses.entries()) {
    const approval = state.approvals.get(call.id);
    if (approval) {
      emit(
        custom('approval_requested', {
          toolCallId: call.id,
          tool: approval.name,
          input: approval.input,
          agent,
          ...(approval.inputTruncated ? { inputTruncated: true } : {}),
          requestedAt: approval.requestedAt,
        }),
      );
    } else if (!results[index] && !over) {
      // Gated or not, it is not known yet: its record or its result will say.
      return { agent, decisionOnly: false };
    }
  }
  for (const [index, call] of uses.entries()) {
    const approval = state.approvals.get(call.id);
    const stored = results[index];
    if (approval?.decision) emit(custom('approval_decided', decided(approval)));
    if (!stored) {
      // The run or the agent's part ended with this call unanswered: nothing more of this message.
      if (over) return undefined;
      return { agent, decisionOnly: approval !== undefined && approval.decision === undefined };
    }
    emit({ type: EventType.TOOL_CALL_RESULT, messageId: `${base}.r${index}`, toolCallId: call.id, content: stored.result.content, role: 'tool' });
    emit(custom('tool_result', { toolCallId: call.id, isError: stored.result.is_error === true, ran: stored.ran }));
  }
  return undefined;
}

/** A decision as the stream shows it. */
function decided(approval: Approval): Record<string, unknown> {
  return {
    toolCallId: approval.toolUseId,
    decision: approval.decision,
    decidedBy: approval.decidedBy ?? 'reviewer',
    ...(approval.decidedAt ? { decidedAt: approval.decidedAt } : {}),
    ...notesOf(approval),
  };
}
