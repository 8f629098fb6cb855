/**
 * The inference step of the agent loop, as a function over the ports: the state machine (or the
 * local loop driver) calls it; it is idempotent under retry (invariant 3, docs/ARCHITECTURE.md).
 */
import { defaultContextPolicy } from '../compaction/types.js';
import { modelMessages, needsCompaction, refusedPolicy } from '../compaction/context.js';
import { type AgentProfile } from '../agents/types.js';
import { agentProfile, openingMessage } from '../agents/profiles.js';
import { type Conversation, type StoredMessage } from '../conversation/types.js';
import { conversationIdOf } from '../conversation/conversation.js';
import { NotFound, StepStateInvalid } from '../errors/errors.js';
import { LiveTextWriter, newAttemptId } from '../live/writer.js';
import { type ContentBlock, toolUses } from '../model/messages.js';
import { ContextWindowExceeded, type ModelResponse, ModelResponseEmpty } from '../model/types.js';
import { answersRun, checkAnswer } from '../output/answer.js';
import { finalAnswerTool } from '../output/types.js';
import { estimateCost } from '../model/prices.js';
import type { Run, RunTotals } from '../runs/types.js';
import { externalSpecs, unavailableNote } from '../tools/external/external-tools.js';
import type { InferenceInput } from './types.js';
import type { InferenceResult } from './types.js';
import { answerFinalCalls } from '../output/step.js';
import { answerMissing } from '../output/step.js';
import { answerSchema } from '../output/step.js';
import { checkPolicyNames } from '../approvals/policy-names.js';
import { compact } from '../compaction/compact.js';
import { countSummary } from '../budgets/step.js';
import { findStep } from '../conversation/next-message.js';
import { madeBy } from '../compaction/compact.js';
import { nextSeq } from '../conversation/next-message.js';
import { planUserMessage } from '../conversation/next-message.js';
import { runControls } from '../runs/controls.js';
import { runResult } from '../runs/result.js';
import { stopIfSpent } from '../budgets/step.js';
import { withAppended } from '../conversation/next-message.js';
import { withFinalAnswer } from '../output/step.js';
import type { InferenceDeps } from './types.js';
import type { LoopBound } from './types.js';
import type { RunControls } from '../runs/controls.js';

/**
 * The state machine's Inference task: the loop's bounds, then the step. The bounds are checked
 * here so the state machine needs no states of its own on every iteration to count
 * (docs/ARCHITECTURE.md, "The agent loop"); it routes on the answer.
 */
export async function loopInferenceStep(input: InferenceInput, deps: InferenceDeps): Promise<InferenceResult | LoopBound> {
  const { iteration, maxIterations, segmentEnd } = input;
  const bound = (stopReason: LoopBound['stopReason']): LoopBound => ({ stopReason, toolCalls: [], gated: false, iteration, next: iteration });
  if (maxIterations !== undefined && iteration >= maxIterations) return bound('iteration_limit');
  if (segmentEnd !== undefined && iteration >= segmentEnd) return bound('continue');
  return inferenceStep(input, deps);
}

/**
 * One inference step: bring the conversation up to date (the pending tool results as one user
 * message, or the run's opening message), call the model once, store its answer.
 *
 * Re-running a step whose assistant message is stored returns that message without a model
 * call; a retry after the user message was written does not write it again.
 */
export async function inferenceStep(input: InferenceInput, deps: InferenceDeps): Promise<InferenceResult> {
  const { runId, agent, iteration } = input;
  const conversationId = input.conversationId ?? conversationIdOf(runId, agent);
  const profile = (deps.profile ?? agentProfile)(agent);
  // The run's budget and output schema, before the model is called.
  const { controls: run, record } = await runControls(runId, deps);
  const schema = answerSchema(run, agent);

  // Bring the conversation up to date. If another writer took the sequence number first (a
  // stale step of an earlier run of the session), look again rather than call the model on a
  // conversation that is not what was planned.
  let conversation = await deps.conversations.load(conversationId);
  for (let attempt = 0; ; attempt++) {
    const answered = findStep(conversation.messages, runId, iteration);
    if (answered) return settle(answered, conversation, input, deps, run);
    const finished = finishedBy(conversation, profile, runId);
    if (finished) return { stopReason: 'end_turn', toolCalls: [], gated: false, iteration, next: iteration + 1, seq: finished.seq };
    const opening = await openingFor(conversation, input, deps, record);
    const next = planUserMessage(conversation, runId, iteration, opening, schema && answerMissing(conversation, runId));
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

  const model = input.model || deps.settings.model;
  const policy = deps.context ?? defaultContextPolicy;
  // The run's external tools come from its stored catalog, so every step sends the same bytes.
  const catalog = deps.externalTools ? await deps.externalTools.forRun(runId) : undefined;
  // The catalog and the policy never change within a run: an agent's first step checks them once.
  if (iteration === 0) await checkPolicyNames(catalog, runId, deps);
  const external = externalSpecs(catalog, agent);
  const request = withFinalAnswer(
    {
      system: profile.system + unavailableNote(catalog, agent),
      tools: external.length ? [...profile.tools.specs(), ...external] : profile.tools.specs(),
    },
    schema,
  );
  // The answer will be the next message, whatever compaction does (a summary is not a message).
  const seq = nextSeq(conversation.messages);
  const ask = async (c: Conversation) => {
    // Each model call is an attempt of its own: a call abandoned for another (a compacted
    // retry, a retried step) leaves its live text apart from the next one's.
    const live = deps.liveText
      ? new LiveTextWriter({ runId, agent, seq, attempt: newAttemptId() }, deps.liveText, deps.livePolicy)
      : undefined;
    try {
      return await deps.model.generate({
        model,
        maxTokens: deps.settings.maxTokens,
        ...request,
        messages: modelMessages(c),
        ...(live ? { onProgress: live.progress } : {}),
      });
    } finally {
      // Before anything is stored: no live write lands after the message.
      await live?.settle();
    }
  };
  // Compact once at most per step: before the call when the conversation nears the window, or
  // when the model says it no longer fits (invariant 11, docs/ARCHITECTURE.md); a second "too long" is the run's error.
  // Each model call is preceded by a budget check; a summary is counted before the answer is asked for.
  const earlier = madeBy(conversation.compaction, input);
  await (earlier ? countSummary(earlier, input, deps, run) : stopIfSpent(run, input, deps, 'before'));
  let compacted = earlier !== undefined;
  if (!compacted && needsCompaction(conversation, policy, deps.settings.maxTokens)) {
    const shorter = await compact(conversation, conversationId, request, model, input, deps, policy);
    compacted = shorter !== undefined;
    conversation = shorter ?? conversation;
    if (shorter?.compaction) await countSummary(shorter.compaction, input, deps, run);
  }
  let response: ModelResponse;
  try {
    response = await ask(conversation);
    if (response.stopReason === 'model_context_window_exceeded' && !compacted) {
      throw new ContextWindowExceeded('The answer was cut off because the conversation filled the context window.');
    }
  } catch (error) {
    if (!(error instanceof ContextWindowExceeded) || compacted) throw error;
    const cutBy = refusedPolicy(conversation, policy, error.limitTokens);
    const shorter = await compact(conversation, conversationId, request, model, input, deps, cutBy);
    if (!shorter) throw error;
    if (shorter.compaction) await countSummary(shorter.compaction, input, deps, run);
    conversation = shorter;
    response = await ask(conversation);
  }

  if (response.message.content.length === 0) {
    throw new ModelResponseEmpty(`The model returned no content (stop_reason "${response.stopReason}").`);
  }
  const messages = conversation.messages;
  const stored: StoredMessage = {
    seq,
    role: 'assistant',
    content: response.message.content,
    meta: { runId, iteration, stopReason: response.stopReason, usage: response.usage, model: response.model },
  };
  const written = await deps.conversations.append(conversationId, { ...stored, carries: undefined });
  if (!written) {
    // Another attempt of this same step got there first: its answer is the one that counts.
    const reloaded = await deps.conversations.load(conversationId);
    const winner = findStep(reloaded.messages, runId, iteration);
    if (!winner) throw new StepStateInvalid(`Message ${seq} of ${conversationId} was taken by another step.`);
    return settle(winner, reloaded, input, deps, run);
  }
  return settle(stored, { ...conversation, messages: [...messages, stored] }, input, deps, run);
}

/**
 * Records the step's usage and cost (once, however often this runs) and, when the agent that
 * answers the run has finished, the run's result; stops the run if that spent its budget; then
 * reduces the message to a step result.
 */
async function settle(
  message: StoredMessage,
  conversation: Conversation,
  input: InferenceInput,
  deps: InferenceDeps,
  run: RunControls | undefined,
): Promise<InferenceResult> {
  const { usage, stopReason, model } = message.meta;
  const reason = stopReason ?? 'end_turn';
  const ended = reason === 'end_turn' || reason === 'stop_sequence';
  const schema = answerSchema(run, input.agent);
  const answer = schema && reason === 'tool_use' ? checkAnswer(toolUses(message), schema) : undefined;
  // With an output schema, only an accepted final_answer finishes the run.
  const finished = schema ? answer?.output !== undefined : ended && answersRun(input.agent);
  const result = finished ? { ...runResult(conversation, input.runId, message), ...(answer?.output ? { output: answer.output } : {}) } : undefined;
  let totals: RunTotals | undefined;
  if (usage) {
    const costUsd = estimateCost(model ?? '', usage);
    totals = await deps.runs.recordStep(input.runId, input.agent, input.iteration, {
      usage,
      // Stryker disable next-line ConditionalExpression: a cost of 0 for an unpriced call adds nothing to the run's cost
      ...(costUsd !== undefined ? { costUsd } : {}),
      ...(result ? { result } : {}),
    });
  }
  await stopIfSpent(run, input, deps, totals ?? 'read', reason === 'tool_use' ? message : undefined);
  if (answer) await answerFinalCalls(answer, message, input, deps);
  const calls = reason === 'tool_use' ? toolUses(message).filter((call) => !(answer && call.name === finalAnswerTool)) : [];
  const gated = new Set(calls.length && deps.approvals ? await deps.approvals.toolsFor(input.runId) : []);
  const toolCalls = calls.map(({ id, name }) => ({ id, name, needsApproval: gated.has(name) }));
  return {
    stopReason: answer?.output ? 'end_turn' : schema && ended ? 'answer_required' : reason,
    toolCalls,
    gated: toolCalls.some((call) => call.needsApproval),
    iteration: input.iteration,
    next: input.iteration + 1,
    seq: message.seq,
  };
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
async function openingFor(
  conversation: Conversation,
  input: InferenceInput,
  deps: InferenceDeps,
  /** The run record, if this step has read it already. */
  record?: Run,
): Promise<ContentBlock[] | undefined> {
  if (conversation.messages.some((m) => m.meta.runId === input.runId)) return undefined;
  if (input.iteration !== 0) {
    throw new StepStateInvalid(`Run ${input.runId} has no messages, but step ${input.iteration} was asked for.`);
  }
  const run = record ?? (await deps.runs.get(input.runId));
  if (!run) throw new NotFound(`Run ${input.runId} does not exist.`);
  return openingMessage(run, input.agent);
}
