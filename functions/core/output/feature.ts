/**
 * Structured output at the inference step (docs/http-api.md, "Structured output"): the
 * `final_answer` tool and its note on the request, the message that asks for it after a turn that
 * ended without it, and what a turn's `final_answer` calls mean for the run.
 */
import { handsOver } from '../runs/types.js';
import type { Conversation } from '../conversation/types.js';
import { textBlock, toolUses } from '../model/messages.js';
import type { InferenceFeature, InferenceStep } from '../steps/hooks.js';
import { checkAnswer, finalAnswerNudge, finalAnswerSpec, finalAnswerSystemNote } from './answer.js';
import { finalAnswerTool } from './types.js';

/** Asks the agent that answers the run for its answer as JSON matching the run's schema. */
export const outputFeature: InferenceFeature = {
  name: 'output',
  continueWith(step, conversation) {
    return schemaOf(step) && answerMissing(conversation, step.input.runId) ? [textBlock(finalAnswerNudge)] : undefined;
  },
  request(step, request) {
    const schema = schemaOf(step);
    if (!schema) return;
    // The same bytes every step of the run, after the agent's own tools (invariant 4).
    request.system += finalAnswerSystemNote;
    request.tools.push(finalAnswerSpec(schema));
  },
  afterModel(answer) {
    const schema = schemaOf(answer);
    if (!schema) return;
    // Only an accepted final_answer finishes the run; a turn that ends without one is asked for it.
    const check = answer.reason === 'tool_use' ? checkAnswer(toolUses(answer.message), schema) : undefined;
    answer.finished = check?.output !== undefined;
    if (check?.output) answer.output = check.output;
    if (check) {
      answer.calls = answer.calls.filter((call) => call.name !== finalAnswerTool);
      answer.answered.push(...check.results);
    }
    const ended = answer.reason === 'end_turn' || answer.reason === 'stop_sequence';
    answer.stopReason = check?.output ? 'end_turn' : ended ? 'answer_required' : answer.reason;
  },
};

/** The output schema the agent must answer with, if the run asked for one and this agent answers it. */
function schemaOf(step: InferenceStep): Record<string, unknown> | undefined {
  const { run } = step;
  return run?.output && step.profile.answersRun && !handsOver(run, step.input.agent) ? run.output.schema : undefined;
}

/** Whether the run's last turn ended without `final_answer` (and without any call). */
function answerMissing(conversation: Conversation, runId: string): boolean {
  const last = conversation.messages.at(-1);
  const ended = last?.meta.stopReason === 'end_turn' || last?.meta.stopReason === 'stop_sequence';
  return last?.role === 'assistant' && last.meta.runId === runId && ended && toolUses(last).length === 0;
}
