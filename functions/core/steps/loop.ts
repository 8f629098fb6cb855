/**
 * The agent loop in-process: the same steps the state machine runs, in the same order
 * (Inference → tools in parallel → Inference …). For one-shot local runs and for tests of
 * multi-step behaviour; deployed runs use the Step Functions definition instead.
 */
import { type ConversationStore } from '../conversation/types.js';
import { conversationIdOf } from '../conversation/conversation.js';
import { type AgentName } from '../agents/types.js';
import { textOf } from '../model/messages.js';
import { ContextWindowExceeded } from '../model/types.js';
import type { InferenceDeps, ToolDeps } from './hooks.js';
import { type InferenceResult, MaxIterationsExceeded, ModelRefused } from './types.js';
import { inferenceStep } from './inference.js';
import { toolStep } from './tool.js';

export interface LoopOptions {
  runId: string;
  agent: AgentName;
  maxIterations: number;
  conversationId?: string;
  /** Called after every inference step, for progress. */
  onStep?: (step: InferenceResult) => void;
}

export interface LoopOutcome {
  response: string;
  iterations: number;
  stopReason: InferenceResult['stopReason'];
}

/** Runs one agent until it ends its turn; throws `MaxIterationsExceeded` or `ModelRefused`. */
export async function runAgentLoop(options: LoopOptions, deps: InferenceDeps & ToolDeps): Promise<LoopOutcome> {
  const conversationId = options.conversationId ?? conversationIdOf(options.runId, options.agent);
  for (let iteration = 0; iteration < options.maxIterations; iteration++) {
    const step = await inferenceStep({ runId: options.runId, agent: options.agent, iteration, conversationId }, deps);
    options.onStep?.(step);
    switch (step.stopReason) {
      case 'tool_use':
        await Promise.all(
          step.toolCalls.map((call) =>
            toolStep(
              { runId: options.runId, agent: options.agent, conversationId, seq: step.seq, toolUseId: call.id },
              deps,
            ),
          ),
        );
        break;
      // max_tokens, pause_turn and answer_required need nothing here: the next step continues the turn.
      case 'refusal':
        throw new ModelRefused('The model declined to continue this run.');
      case 'model_context_window_exceeded':
        throw new ContextWindowExceeded('The conversation no longer fits the model context window.');
      case 'end_turn':
      case 'stop_sequence':
        return {
          response: await finalText(deps.conversations, conversationId, step.seq),
          iterations: iteration + 1,
          stopReason: step.stopReason,
        };
    }
  }
  throw new MaxIterationsExceeded(`The agent reached the limit of ${options.maxIterations} iterations without finishing.`);
}

async function finalText(conversations: ConversationStore, conversationId: string, seq: number): Promise<string> {
  const turn = await conversations.loadTurn(conversationId, seq);
  return turn ? textOf(turn.message) : '';
}
