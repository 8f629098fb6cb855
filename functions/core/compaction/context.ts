/**
 * Keeping a conversation inside the model's context window.
 *
 * Every message stays in memory; what the model is sent can start later. When the conversation
 * nears the window, the older turns are summarized by the model and the request becomes the
 * summary (as the first user message) followed by the newer turns verbatim. The cut is always
 * placed at an assistant message that follows a user message, so every `tool_use` sent keeps
 * its `tool_result` and the roles still alternate (invariant 6, docs/ARCHITECTURE.md).
 *
 * The summary is stored once per cut and reused by every later step, so the requests stay
 * byte-stable between compactions and prompt caching keeps hitting (invariant 4).
 */
import type { Compaction, Conversation, StoredMessage } from '../conversation/types.js';
import { type Message, textBlock } from '../model/messages.js';
import type { ContextPolicy } from './types.js';

/** A rough token count (about four characters a token), for content the model has not yet counted. */
export function roughTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function messageTokens(message: StoredMessage): number {
  return roughTokens(JSON.stringify(message.content));
}

const summaryHeading =
  'Summary of the earlier part of this conversation (the older turns were condensed to fit the context window; ' +
  'the full transcript is kept):';

/** What the model is sent: the summary, if any, then every message from the cut on. */
export function modelMessages(conversation: Conversation): Message[] {
  const { compaction } = conversation;
  const kept = compaction ? conversation.messages.filter((m) => m.seq >= compaction.fromSeq) : conversation.messages;
  const messages = kept.map(({ role, content }) => ({ role, content }));
  return compaction ? [summaryMessage(compaction), ...messages] : messages;
}

function summaryMessage(compaction: Compaction): Message {
  return { role: 'user', content: [textBlock(`${summaryHeading}\n\n${compaction.summary}`)] };
}

/**
 * The conversation's size in tokens as the model last counted it (the newest answer's input and
 * output), plus a rough count of what was added since. Unknown right after a compaction, until
 * the model has counted the shortened conversation.
 */
export function estimatedTokens(conversation: Conversation): number | undefined {
  const { messages, compaction } = conversation;
  // Stryker disable next-line LogicalOperator,ConditionalExpression: only assistant messages carry usage
  const index = messages.findLastIndex((m) => m.role === 'assistant' && m.meta.usage !== undefined);
  const counted = messages[index];
  if (!counted?.meta.usage || (compaction && counted.seq <= compaction.atSeq)) return undefined;
  const { inputTokens, outputTokens, cacheReadInputTokens, cacheCreationInputTokens } = counted.meta.usage;
  const since = messages.slice(index + 1).reduce((sum, m) => sum + messageTokens(m), 0);
  return inputTokens + cacheReadInputTokens + cacheCreationInputTokens + outputTokens + since;
}

/**
 * Whether the next request should be compacted first: past the share of the window, or too close
 * to its end to leave room for an answer of `maxTokens` (the API refuses prompt + max_tokens
 * over the window).
 */
export function needsCompaction(conversation: Conversation, policy: ContextPolicy, maxTokens = 0): boolean {
  const tokens = estimatedTokens(conversation);
  // Stryker disable next-line ConditionalExpression: every comparison with undefined is false; the guard narrows the type
  if (tokens === undefined) return false;
  return tokens > policy.compactAt * policy.windowTokens || tokens + maxTokens > policy.windowTokens;
}

/**
 * The policy to cut by once the model has refused the conversation as too long: the window it
 * named, or else the conversation's own rough size, whichever tells more than the configuration.
 */
export function refusedPolicy(conversation: Conversation, policy: ContextPolicy, limitTokens?: number): ContextPolicy {
  const size = conversation.messages.reduce((sum, m) => sum + messageTokens(m), 0);
  const window = Math.min(policy.windowTokens, limitTokens ?? size);
  return { ...policy, windowTokens: Math.max(1, window) };
}

/**
 * Where to cut: the earliest assistant message (after a user message, and after the current
 * cut) from which the rest of the conversation fits the share of the window kept verbatim; the
 * latest such message when none does. `undefined` when there is nothing older to summarize.
 */
export function chooseCut(conversation: Conversation, policy: ContextPolicy): number | undefined {
  const { messages, compaction } = conversation;
  const floor = compaction?.fromSeq ?? 0;
  const budget = policy.keepShare * policy.windowTokens;
  // Each candidate with the size of the conversation from it to the end.
  let rest = messages.reduce((sum, m) => sum + messageTokens(m), 0);
  const candidates: { seq: number; rest: number }[] = [];
  messages.forEach((m, i) => {
    // Stryker disable next-line OptionalChaining,ConditionalExpression: message 0 has seq 0, never above the floor, so message i - 1 exists whenever it is read; roles alternate, so a message after a user message is the model's
    if (m.role === 'assistant' && m.seq > floor && messages[i - 1]?.role === 'user') candidates.push({ seq: m.seq, rest });
    rest -= messageTokens(m);
  });
  return (candidates.find((c) => c.rest <= budget) ?? candidates.at(-1))?.seq;
}

export const summaryInstruction =
  'The conversation is about to exceed the context window. Write a summary of the conversation so far that ' +
  'lets you carry on the task without it: the goal and any plan word for word; decisions made and why; ' +
  'files read, written or edited, with the facts about them you still need; tool results that matter; ' +
  'what is done and what remains. Reply with the summary only, in plain text. Do not call any tool.';

/**
 * The request that asks for a summary of the messages before `cut`: the same prefix the model
 * has been sent (so the cached prefix is reused), with the instruction added to its last user
 * message.
 */
export function summaryRequestMessages(conversation: Conversation, cut: number): Message[] {
  const before = modelMessages({ ...conversation, messages: conversation.messages.filter((m) => m.seq < cut) });
  const last = before.at(-1);
  if (last?.role !== 'user') return [...before, { role: 'user', content: [textBlock(summaryInstruction)] }];
  return [...before.slice(0, -1), { role: 'user', content: [...last.content, textBlock(summaryInstruction)] }];
}
