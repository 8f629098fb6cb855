/**
 * A run's result: its final answer and the tool calls that ran, bounded for the run record.
 */
import { type Conversation, type StoredMessage } from '../conversation/types.js';
import { callKey } from '../conversation/conversation.js';
import { type ToolUseBlock, textOf, toolUses } from '../model/messages.js';
import type { RunResult } from '../runs/types.js';

/** Bounds that keep the run record far from DynamoDB's 400 KB item limit (invariant 2, docs/ARCHITECTURE.md). */
export const resultLimits = { actions: 300, responseChars: 50_000 };

/**
 * The final answer and the tool calls of this run that ran, in order (bounded). A call ran when its
 * result is stored and was not written instead of running it: a call a reviewer denied, one
 * answered as interrupted and one refused before the tool was reached are no actions taken.
 */
export function runResult(conversation: Pick<Conversation, 'messages' | 'notRun'>, runId: string, final: StoredMessage): RunResult {
  const { messages, notRun } = conversation;
  const calls = messages.flatMap((m, i) => {
    if (m.role !== 'assistant' || m.meta.runId !== runId) return [];
    // The results of a turn's calls are in the message after it (invariant 6).
    const next = messages[i + 1];
    const answered = new Set(next?.content.flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : [])));
    return toolUses(m)
      .filter((call, index) => answered.has(call.id) && !notRun?.has(callKey(m.seq, index)))
      .map((call) => describeCall(call));
  });
  const actionsTaken =
    calls.length > resultLimits.actions
      ? [...calls.slice(0, resultLimits.actions), `… and ${calls.length - resultLimits.actions} more tool calls (see the transcript)`]
      : calls;
  const text = textOf(final);
  const response =
    text.length > resultLimits.responseChars
      ? `${text.slice(0, resultLimits.responseChars)}\n\n[The answer is longer; the transcript has all of it.]`
      : text;
  return { response, actionsTaken };
}

/** A tool call as one short line: its name and input. */
export function describeCall(call: ToolUseBlock): string {
  const input = JSON.stringify(call.input ?? {});
  return `${call.name} ${input.length > 200 ? `${input.slice(0, 199)}…` : input}`;
}
