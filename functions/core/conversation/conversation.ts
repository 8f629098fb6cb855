/**
 * Conversation memory: ids, keys, and how stored records assemble into the conversation a step
 * reads (docs/ARCHITECTURE.md, "Memory layout").
 */
import { type Owner } from '../callers/types.js';
import { ownerKey } from '../callers/access.js';
import type { AgentName } from '../agents/types.js';
import { StepStateInvalid, StoredDataInvalid } from '../errors/errors.js';
import { type ToolResultBlock, toolUses } from '../model/messages.js';
import type { Compaction, Conversation, ConversationRecord, ConversationStore, StoredCall, StoredMessage } from './types.js';

/** How `Conversation.notRun` names call `index` of assistant message `seq`. */
export function callKey(seq: number, index: number): string {
  return `${seq}/${index}`;
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
