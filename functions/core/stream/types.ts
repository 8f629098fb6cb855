/**
 * The event stream's records: events with their cursors, what a reader has read of each agent,
 * and what the derivation waits for.
 */
import { type AGUIEvent } from '@ag-ui/core';
import { type Approval } from '../approvals/types.js';
import type { LiveAttempt, LiveTexts } from '../live/types.js';
import { type ContentBlock, type Role, type ToolResultBlock } from '../model/messages.js';
import { type ConversationRecord, type MessageMeta } from '../conversation/types.js';
import type { AgentName } from '../agents/types.js';
import { type Run } from '../runs/types.js';
import type { Owner } from '../callers/types.js';
import { named } from '../errors/errors.js';

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

/** Where a read of a conversation starts: message `seq` itself, or (with `result`) its tool results from call `result` on. */
export interface ConversationFrom {
  seq: number;
  result?: number;
}

/** What the stream reads, each read consistent (it sees every write that completed before it). */
export interface RunEventSources {
  /**
   * A conversation's items from `from` on, in key order: messages (those of other runs may be
   * left out) and tool results; summaries may be left out.
   */
  conversationFrom(conversationId: string, from: ConversationFrom, runId: string): Promise<ConversationRecord[]>;
  liveTexts: LiveTexts;
  /** The run record and all of the run's approvals, in one read. */
  runWithApprovals(runId: string): Promise<{ run: Run | undefined; approvals: Approval[] }>;
}

export interface TickResult {
  /** The events after the last one returned (or after the cursor the reader started from). */
  events: PositionedEvent[];
  /** The run's last event has been returned. */
  done: boolean;
  /** Something new was read or returned: poll again soon. */
  changed: boolean;
  /** The run record changed after the conversation was read: read again at once to take it in. */
  again: boolean;
}

// ---------------------------------------------------------------------------------------------
// Following a run: polling with back-off, heartbeats, a longest duration
// ---------------------------------------------------------------------------------------------

export interface FollowSettings {
  /** Milliseconds between reads while things change. */
  fastPollMs: number;
  /** The longest wait between reads of a run where nothing happens. */
  idlePollMs: number;
  /** A comment goes out after this long without anything else, so proxies keep the connection. */
  heartbeatMs: number;
  /** The stream ends after this long, with the last cursor, for the client to resume. */
  maxDurationMs: number;
}

export type StreamOutput =
  | { kind: 'event'; cursor: string; event: AGUIEvent }
  | { kind: 'heartbeat' }
  /** The longest duration was reached: resume after `cursor`. */
  | { kind: 'limit'; cursor: string | undefined };

export interface FollowOptions extends FollowSettings {
  /** Stops reading (the client went away). */
  signal: AbortSignal;
  now?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** The most event streams one caller may have open at once, unless the deployment says otherwise. */
export const defaultMaxStreamsPerCaller = 10;

/**
 * The open streams of each caller, capped (docs/http-api.md, "Limits on streams"): a slot per
 * stream, taken with a conditional write when it opens and given back when it ends. A slot whose
 * stream never gave it back (its function crashed) is taken over once it is older than a stream
 * can live.
 */
export interface StreamSlots {
  /** Takes one of the owner's `limit` slots for stream `streamId`; `false` when all are held. */
  take(owner: Owner, streamId: string, limit: number): Promise<boolean>;
  release(owner: Owner, streamId: string): Promise<void>;
}

/** The caller has as many streams open as the deployment allows (429). */
export class TooManyStreams extends named('TooManyStreams') {}
