/**
 * Structured output at the inference step: the `final_answer` tool and its note on the request,
 * the message that asks for it, and the answers to its calls.
 */
import { type Conversation, type StoredMessage } from '../conversation/types.js';
import { conversationIdOf } from '../conversation/conversation.js';
import { type ContentBlock, textBlock, toolUses } from '../model/messages.js';
import { type ModelRequest } from '../model/types.js';
import type { AgentName } from '../agents/types.js';
import type { checkAnswer} from './answer.js';
import { answersRun, finalAnswerNudge, finalAnswerSpec, finalAnswerSystemNote } from './answer.js';
import type { InferenceInput } from '../steps/types.js';
import type { InferenceDeps } from '../steps/types.js';
import type { RunControls } from '../runs/controls.js';

/** The output schema the agent must answer with, if the run asked for one and this agent answers it. */
export function answerSchema(run: RunControls | undefined, agent: AgentName): Record<string, unknown> | undefined {
  return run?.output && answersRun(agent) ? run.output.schema : undefined;
}

/** The step's request with the `final_answer` tool and its note, when the agent must answer with it (the same bytes every step). */
export function withFinalAnswer(request: Pick<ModelRequest, 'system' | 'tools'>, schema: Record<string, unknown> | undefined): Pick<ModelRequest, 'system' | 'tools'> {
  if (!schema) return request;
  return { system: request.system + finalAnswerSystemNote, tools: [...request.tools, finalAnswerSpec(schema)] };
}

/** The message that asks for `final_answer`, when the run's last turn ended without it. */
export function answerMissing(conversation: Conversation, runId: string): ContentBlock[] | undefined {
  const last = conversation.messages.at(-1);
  const ended = last?.meta.stopReason === 'end_turn' || last?.meta.stopReason === 'stop_sequence';
  return last?.role === 'assistant' && last.meta.runId === runId && ended && toolUses(last).length === 0
    ? [textBlock(finalAnswerNudge)]
    : undefined;
}

/** Stores the answers to a turn's `final_answer` calls (once: a retry finds them stored). */
export async function answerFinalCalls(
  answer: ReturnType<typeof checkAnswer>,
  message: StoredMessage,
  input: InferenceInput,
  deps: InferenceDeps,
): Promise<void> {
  const conversationId = input.conversationId ?? conversationIdOf(input.runId, input.agent);
  for (const { index, result, ran } of answer.results) {
    await deps.conversations.putResult(conversationId, message.seq, index, result, ran ? {} : { ran: false });
  }
}
