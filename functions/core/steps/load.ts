/**
 * The load stage of the inference step: the conversation brought up to date before the model is
 * called. The pending tool results go in as one user message (a call without one answered with an
 * error saying why, invariants 6 and 13), or the run's opening message; a step whose answer is
 * stored, or whose agent has finished, goes no further.
 */
import { openingMessage } from '../agents/profiles.js';
import type { AgentProfile } from '../agents/types.js';
import { findStep, planUserMessage, withAppended } from '../conversation/next-message.js';
import type { Conversation, StoredMessage } from '../conversation/types.js';
import { NotFound, StepStateInvalid } from '../errors/errors.js';
import { type ContentBlock, toolUses } from '../model/messages.js';
import type { Run } from '../runs/types.js';
import type { InferenceFeature, InferenceStep } from './hooks.js';

/** Where loading left the step. */
export type Loaded =
  /** A retry: the step's answer is stored already. */
  | { kind: 'answered'; message: StoredMessage; conversation: Conversation }
  /** The agent's part of the run is over (its finish tool succeeded): nothing to ask. */
  | { kind: 'finished'; message: StoredMessage }
  /** Up to date: the model can be called. */
  | { kind: 'ready'; conversation: Conversation };

/**
 * Loads the conversation and appends what the model must see next. If another writer took the
 * sequence number first (a stale step of an earlier run of the session), it looks again rather
 * than call the model on a conversation that is not what was planned.
 */
export async function bringUpToDate(step: InferenceStep, features: readonly InferenceFeature[], record: Run | undefined): Promise<Loaded> {
  const { input, deps, conversationId } = step;
  const { runId, iteration } = input;
  let conversation = await deps.conversations.load(conversationId);
  for (let attempt = 0; ; attempt++) {
    const answered = findStep(conversation.messages, runId, iteration);
    if (answered) return { kind: 'answered', message: answered, conversation };
    const finished = finishedBy(conversation, step.profile, runId);
    if (finished) return { kind: 'finished', message: finished };
    const opening = await openingFor(conversation, step, record);
    const next = planUserMessage(conversation, runId, iteration, opening, continuation(step, features, conversation));
    if (!next) break;
    for (const [index, result] of next.repairs) {
      // A call answered for want of a result did not run (as far as anyone knows).
      await deps.conversations.putResult(conversationId, next.answering, index, result, { ran: false });
    }
    if (await deps.conversations.append(conversationId, next.message)) {
      // Written as planned: the conversation is known without reading it again.
      conversation = withAppended(conversation, next);
      break;
    }
    conversation = await deps.conversations.load(conversationId);
    // Stryker disable next-line ConditionalExpression,OptionalChaining,UnaryOperator: without it the next pass finds nothing left to write and stops there; the check saves that pass
    if (conversation.messages.at(-1)?.meta.runId === runId) break;
    if (attempt >= 2) throw new StepStateInvalid(`Conversation ${conversationId} keeps changing under step ${iteration}.`);
  }
  return { kind: 'ready', conversation };
}

/** What the features would tell the model after a turn that ended without what the run needs (the first that says anything). */
function continuation(step: InferenceStep, features: readonly InferenceFeature[], conversation: Conversation): ContentBlock[] | undefined {
  for (const feature of features) {
    const said = feature.continueWith?.(step, conversation);
    if (said) return said;
  }
  return undefined;
}

/**
 * The agent's last turn if it ended the agent's part with a successful call of its finish tool
 * (the Architect's accepted plan): nothing is left to ask the model.
 */
function finishedBy(conversation: Conversation, profile: AgentProfile, runId: string): StoredMessage | undefined {
  const last = conversation.messages.at(-1);
  // Stryker disable next-line ConditionalExpression: a user message holds no tool calls, so none of them is accepted anyway
  if (!profile.finishTool || last?.role !== 'assistant' || last.meta.runId !== runId) return undefined;
  const accepted = toolUses(last).some((call, i) => {
    const result = conversation.pendingResults[i];
    return call.name === profile.finishTool && result !== undefined && !result.is_error;
  });
  return accepted ? last : undefined;
}

/** The run's opening message, when this agent has not yet written anything for the run. */
async function openingFor(conversation: Conversation, step: InferenceStep, record: Run | undefined): Promise<ContentBlock[] | undefined> {
  const { input, deps } = step;
  if (conversation.messages.some((m) => m.meta.runId === input.runId)) return undefined;
  if (input.iteration !== 0) {
    throw new StepStateInvalid(`Run ${input.runId} has no messages, but step ${input.iteration} was asked for.`);
  }
  const run = record ?? (await deps.runs.get(input.runId));
  if (!run) throw new NotFound(`Run ${input.runId} does not exist.`);
  return openingMessage(run, input.agent);
}
