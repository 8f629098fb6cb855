/**
 * What a step appends before the model is called: the pending tool results as one user message
 * (a missing result answered with an error saying why), or the run's opening message.
 */
import { type Conversation, type NewMessage, type StoredMessage } from './types.js';
import { callKey } from './conversation.js';
import { StepStateInvalid } from '../errors/errors.js';
import { type ContentBlock, type ToolResultBlock, type ToolUseBlock, textBlock, toolResult, toolUses } from '../model/messages.js';

export function findStep(messages: StoredMessage[], runId: string, iteration: number): StoredMessage | undefined {
  return messages.findLast(
    (m) => m.role === 'assistant' && m.meta.runId === runId && m.meta.iteration === iteration,
  );
}

const interruptedNote =
  'This tool call was interrupted before it returned a result (the run stopped, failed or was cancelled), ' +
  'so it may or may not have taken effect. Check before repeating it.';

const truncatedCallNote =
  'This tool call was cut off by the output token limit (max_tokens) and was not run. ' +
  'Call it again with a smaller input, for example by writing a large file in parts.';

/** What the model is told after an answer cut off by max_tokens that called no tool. */
export const truncatedTextNote =
  'Your previous response was cut off by the output token limit (max_tokens). Continue from where it stopped, more briefly.';

export interface PlannedUserMessage {
  message: NewMessage;
  /** The assistant message whose calls this one answers. */
  answering: number;
  /** Results to write first, for calls that never got one (invariant 13, docs/ARCHITECTURE.md). */
  repairs: [number, ToolResultBlock][];
}

/**
 * What must be appended before the model is called, if anything: every call of the last
 * assistant message answered, in order, by its stored result or by an error saying why it has
 * none (invariants 6 and 13, docs/ARCHITECTURE.md), followed by the run's opening message when the run starts here.
 */
export function planUserMessage(
  conversation: Conversation,
  runId: string,
  iteration: number,
  opening: ContentBlock[] | undefined,
  /** Sent after a turn that ended without a call the run still needs (structured output's `final_answer`). */
  nudge?: ContentBlock[],
): PlannedUserMessage | undefined {
  const last = conversation.messages.at(-1);
  const seq = nextSeq(conversation.messages);
  const meta = { runId, iteration };
  if (last?.role !== 'assistant') {
    // Stryker disable next-line UnaryOperator: an opening answers no turn and repairs nothing, so `answering` is never read
    return opening ? { message: { seq, role: 'user', content: opening, meta }, answering: -1, repairs: [] } : undefined;
  }
  const calls = toolUses(last);
  const cutOff = last.meta.stopReason === 'max_tokens';
  const repairs = calls.flatMap((call: ToolUseBlock, index): [number, ToolResultBlock][] =>
    conversation.pendingResults[index] ? [] : [[index, toolResult(call.id, cutOff ? truncatedCallNote : interruptedNote, true)]],
  );
  const content: ContentBlock[] = [];
  if (cutOff && calls.length === 0) content.push(textBlock(truncatedTextNote));
  if (opening) content.push(...opening);
  if (calls.length === 0 && content.length === 0 && nudge) content.push(...nudge);
  if (calls.length === 0 && content.length === 0) {
    if (last.meta.stopReason === 'pause_turn') return undefined; // send the paused turn back as it is
    throw new StepStateInvalid(`The conversation already ended with message ${last.seq}; there is nothing to send.`);
  }
  return {
    message: {
      seq,
      role: 'user',
      content,
      meta,
      carries: calls.length > 0 ? { seq: last.seq, count: calls.length } : undefined,
    },
    answering: last.seq,
    repairs,
  };
}

/** The conversation after a planned user message was appended, as loading it would give. */
export function withAppended(conversation: Conversation, planned: PlannedUserMessage): Conversation {
  const { seq, role, content, meta, carries } = planned.message;
  const repaired = new Map(planned.repairs);
  const notRun = new Set(conversation.notRun);
  for (const [index] of planned.repairs) notRun.add(callKey(planned.answering, index));
  const results = carries
    ? Array.from({ length: carries.count }, (_, i) => {
        const result = conversation.pendingResults[i] ?? repaired.get(i);
        if (!result) throw new StepStateInvalid(`Result ${i} of message ${carries.seq} is missing.`);
        return result;
      })
    : [];
  return {
    ...conversation,
    messages: [...conversation.messages, { seq, role, content: [...results, ...content], meta }],
    pendingResults: [],
    ...(notRun.size ? { notRun } : {}),
  };
}

export function nextSeq(messages: StoredMessage[]): number {
  const last = messages.at(-1);
  return last ? last.seq + 1 : 0;
}
