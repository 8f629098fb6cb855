/**
 * Conversation memory: the port the steps use, and the rules for what the next request holds.
 *
 * A conversation is an append-only list of messages numbered 0, 1, 2, … (invariant 2, docs/ARCHITECTURE.md).
 * Tool results are written one by one, by the tool steps, against the assistant message whose
 * calls they answer; the user message that carries them to the model stores only a reference
 * (`carries`), and loading splices them in, in call order (invariant 6, docs/ARCHITECTURE.md).
 */
import * as z from 'zod';
import { type Owner, ownerKey } from './callers.js';
import type { AgentName } from './names.js';
import { StepStateInvalid, StoredDataInvalid } from './errors.js';
import type { Message, ToolResultBlock, ToolUseBlock } from './messages.js';
import { ContentBlock, Role, StopReason, Usage, toolUses } from './messages.js';


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

/** How `Conversation.notRun` names call `index` of assistant message `seq`. */
export function callKey(seq: number, index: number): string {
  return `${seq}/${index}`;
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

/** The conversation of one agent of one run, unless a session names a longer-lived one. */
export function conversationIdOf(runId: string, agent: AgentName, sessionId?: string, owner?: Owner): string {
  if (!sessionId) return `run/${runId}/${agent}`;
  // Sessions are per owner: the same sessionId from two callers names two conversations. Runs
  // made before runs had owners keep their session's old id.
  return owner ? `session/${ownerKey(owner)}/${sessionId}` : `session/${sessionId}`;
}

/** The zero-padded sort key of a message: ordered as text, so as numbers too. */
export function seqKey(seq: number): string {
  return seq.toString().padStart(10, '0');
}

/** A stored item of a conversation: a message, the result of one call of a message, or a summary. */
export type ConversationRecord =
  | ({ kind: 'message' } & NewMessage)
  | { kind: 'result'; seq: number; index: number; result: ToolResultBlock; ran?: boolean }
  | { kind: 'compaction'; compaction: Compaction };

/**
 * Builds the conversation from its records in key order (each message, then its results):
 * results are spliced into the user message that carries them; the last message's results that
 * no message carries yet are pending.
 */
export function assembleConversation(records: Iterable<ConversationRecord>): Conversation {
  const results = new Map<number, ToolResultBlock[]>();
  const messages: StoredMessage[] = [];
  const notRun = new Set<string>();
  let compaction: Compaction | undefined;
  for (const record of records) {
    if (record.kind === 'compaction') {
      // Stryker disable next-line EqualityOperator: two summaries never share a cut (each cut lies after the one before)
      if (!compaction || record.compaction.fromSeq > compaction.fromSeq) compaction = record.compaction;
      continue;
    }
    if (record.kind === 'result') {
      if (record.ran === false) notRun.add(callKey(record.seq, record.index));
      const list = results.get(record.seq) ?? [];
      list[record.index] = record.result;
      results.set(record.seq, list);
      continue;
    }
    const { seq, role, content, meta, carries } = record;
    if (!carries) {
      messages.push({ seq, role, content, meta });
      continue;
    }
    const carried = results.get(carries.seq) ?? [];
    const spliced = Array.from({ length: carries.count }, (_, i) => {
      const result = carried[i];
      if (!result) throw new StoredDataInvalid(`Message ${seq} carries result ${i} of message ${carries.seq}, which is missing.`);
      return result;
    });
    messages.push({ seq, role, content: [...spliced, ...content], meta });
  }
  const last = messages.at(-1);
  return {
    messages,
    pendingResults: last?.role === 'assistant' ? (results.get(last.seq) ?? []) : [],
    ...(compaction ? { compaction } : {}),
    ...(notRun.size ? { notRun } : {}),
  };
}

/**
 * Loads the call a step names: `toolUseId` of assistant message `seq`. A step whose ids name no
 * stored call was sent a state the loop never wrote: `StepStateInvalid`.
 */
export async function loadCall(
  conversations: Pick<ConversationStore, 'loadTurn'>,
  ids: { runId: string; agent: AgentName; conversationId?: string | undefined; seq: number; toolUseId: string },
): Promise<StoredCall> {
  const conversationId = ids.conversationId ?? conversationIdOf(ids.runId, ids.agent);
  const turn = await conversations.loadTurn(conversationId, ids.seq);
  if (!turn || turn.message.role !== 'assistant') {
    throw new StepStateInvalid(`Message ${ids.seq} of ${conversationId} is not a stored assistant message.`);
  }
  const calls = toolUses(turn.message);
  const index = calls.findIndex((c) => c.id === ids.toolUseId);
  const call = calls[index];
  if (!call) throw new StepStateInvalid(`Message ${ids.seq} has no tool call ${ids.toolUseId}.`);
  return { conversationId, turn, call, index };
}
