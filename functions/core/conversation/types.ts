/**
 * Conversation memory's records and port. A conversation is an append-only list of messages
 * numbered 0, 1, 2, … (invariant 2, docs/ARCHITECTURE.md). Tool results are written one by one, by
 * the tool steps, against the assistant message whose calls they answer; the user message that
 * carries them to the model stores only a reference (`carries`), and loading splices them in, in
 * call order (invariant 6).
 */
import * as z from 'zod';
import { ContentBlock, type Message, Role, StopReason, type ToolResultBlock, type ToolUseBlock, Usage } from '../model/messages.js';

/** Who wrote a message and in which step: the key that makes steps idempotent (invariant 3, docs/ARCHITECTURE.md). */
/** A stored summary of the messages before `fromSeq`. */
export const Compaction = z.object({
  /** The first message sent verbatim after the summary. */
  fromSeq: z.number().int().positive(),
  /** The conversation's last message when the summary was made. */
  atSeq: z.number().int().nonnegative(),
  summary: z.string().min(1),
  /** The step that made it, so its model usage is counted with that step. */
  runId: z.string(),
  iteration: z.number().int().nonnegative(),
  usage: Usage,
  model: z.string(),
});

export type Compaction = z.infer<typeof Compaction>;

export const MessageMeta = z.object({
  runId: z.string(),
  iteration: z.number().int().nonnegative(),
  stopReason: StopReason.optional(),
  usage: Usage.optional(),
  model: z.string().optional(),
  /** An answer: when its model call began (ISO 8601) and how many milliseconds it took (the console's timeline). */
  startedAt: z.string().optional(),
  ms: z.number().nonnegative().optional(),
});

export type MessageMeta = z.infer<typeof MessageMeta>;

export interface StoredMessage extends Message {
  seq: number;
  meta: MessageMeta;
}

/** A message to append. A user message that carries tool results names the turn it answers. */
export const NewMessage = z.object({
  seq: z.number().int().nonnegative(),
  role: Role,
  /** The message's own blocks; for a carrier, the blocks that follow the results. */
  content: z.array(ContentBlock),
  meta: MessageMeta,
  carries: z.object({ seq: z.number().int().nonnegative(), count: z.number().int().positive() }).optional(),
});

export type NewMessage = z.infer<typeof NewMessage>;

export interface Conversation {
  /** Every message in order, tool results spliced into the user messages that carry them. */
  messages: StoredMessage[];
  /** Results already written for the last message's calls, indexed by call position. */
  pendingResults: (ToolResultBlock | undefined)[];
  /** The newest summary of older turns: the model is sent it instead of the messages before its cut. */
  compaction?: Compaction;
  /**
   * The calls answered without being run (denied by a reviewer, interrupted, refused before the
   * tool was reached), as `callKey(seq, index)`; absent when every answered call ran.
   */
  notRun?: ReadonlySet<string>;
}

/** How a tool result came about, beside the result itself (the model sees only the result). */
export interface ResultOptions {
  /** The whole output of a result the model sees cut, kept beside it. */
  fullOutput?: string;
  /** `false` when the call was answered without running it: denied, interrupted or refused. @default true */
  ran?: boolean;
}

/** One assistant turn and the results written so far for its calls (indexed by call position). */
export interface Turn {
  message: StoredMessage;
  results: (ToolResultBlock | undefined)[];
}

/** One tool call of a stored assistant turn, as a tool or approval step finds it by its ids. */
export interface StoredCall {
  conversationId: string;
  turn: Turn;
  call: ToolUseBlock;
  /** The call's position in the turn, which is its result's too (invariant 6, docs/ARCHITECTURE.md). */
  index: number;
}

/** Durable, append-only conversation memory. */
export interface ConversationStore {
  load(conversationId: string): Promise<Conversation>;
  /** Writes the message unless its `seq` is taken; `false` when it was (a retry or a race). */
  append(conversationId: string, message: NewMessage): Promise<boolean>;
  loadTurn(conversationId: string, seq: number): Promise<Turn | undefined>;
  /** Stores the result of call `index` of message `seq` unless one is stored; returns the stored one. */
  putResult(conversationId: string, seq: number, index: number, result: ToolResultBlock, options?: ResultOptions): Promise<ToolResultBlock>;
  /** Stores a summary unless one with the same cut is stored; returns the stored one. */
  putCompaction(conversationId: string, compaction: Compaction): Promise<Compaction>;
}

/** A stored item of a conversation: a message, the result of one call of a message, or a summary. */
export type ConversationRecord =
  | ({ kind: 'message' } & NewMessage)
  | { kind: 'result'; seq: number; index: number; result: ToolResultBlock; ran?: boolean }
  | { kind: 'compaction'; compaction: Compaction };
