/**
 * The inference step of the agent loop, as a function over the ports: the state machine (or the
 * local loop driver) calls it; it is idempotent under retry (invariant 3, docs/ARCHITECTURE.md).
 * A fixed pipeline, load → before-model → call model → store → after-model; budgets, compaction,
 * structured output, live text, approvals, external tools and the run's result attach at its hook
 * points (`hooks.ts`, in the order of `features.ts`).
 */
import { profileFor } from '../agents/profiles.js';
import { conversationIdOf } from '../conversation/conversation.js';
import { findStep, nextSeq } from '../conversation/next-message.js';
import type { StoredMessage } from '../conversation/types.js';
import { modelMessages } from '../compaction/context.js';
import { StepStateInvalid } from '../errors/errors.js';
import { ModelResponseEmpty, type ModelResponse } from '../model/types.js';
import { runControls } from '../runs/controls.js';
import { RunCancelled } from '../runs/types.js';
import { inferenceFeatures } from './features.js';
import type { CallOptions, InferenceDeps, InferenceStep, ModelCall, StepRequest } from './hooks.js';
import { bringUpToDate } from './load.js';
import { count, settle } from './settle.js';
import type { InferenceInput, InferenceResult, LoopBound } from './types.js';

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
  const features = deps.features ?? inferenceFeatures;
  // Load: the run's controls (budget, output schema), then the conversation brought up to date.
  const { controls: run, record: fresh } = await runControls(input.runId, deps);
  // Its status, read on every step (controls may be cached): a cancelled run calls the model no
  // more, even when stopping its execution failed (cancel marks the run first, then stops it).
  const record = fresh ?? (await deps.runs.get(input.runId));
  if (record?.status === 'cancelled') throw new RunCancelled(`Run ${input.runId} was cancelled; its ${input.agent} agent calls the model no more.`);
  const step: InferenceStep = {
    input,
    deps,
    conversationId: input.conversationId ?? conversationIdOf(input.runId, input.agent),
    profile: deps.profile ? deps.profile(input.agent) : await profileFor(input.agent, run?.agents, deps.agentStore),
    run,
  };
  const loaded = await bringUpToDate(step, features, record);
  if (loaded.kind === 'answered') return settle(step, features, loaded.message, loaded.conversation);
  if (loaded.kind === 'finished') return { stopReason: 'end_turn', toolCalls: [], gated: false, iteration: input.iteration, next: input.iteration + 1, seq: loaded.message.seq };

  // Before the model: the request (the same bytes every step of a run), then what may stop or shorten it.
  const request: StepRequest = { system: step.profile.system, tools: [...step.profile.tools.specs()] };
  for (const feature of features) await feature.request?.(step, request);
  const call: ModelCall = {
    ...step,
    request,
    model: input.model || step.profile.model || deps.settings.model,
    maxTokens: step.profile.maxTokens ?? deps.settings.maxTokens,
    // The answer will be the next message, whatever compaction does (a summary is not a message).
    seq: nextSeq(loaded.conversation.messages),
    conversation: loaded.conversation,
    count: (summary) => count(step, features, 'summary', summary),
  };
  for (const feature of features) await feature.beforeModel?.(call);

  // Call the model, through the hooks around it (the first listed outermost).
  const around = features.flatMap((feature) => (feature.aroundModel ? [feature.aroundModel.bind(feature)] : []));
  const attempt = (index: number, options: CallOptions): Promise<ModelResponse> => {
    const hook = around[index];
    if (hook) return hook(call, (more) => attempt(index + 1, { ...options, ...more }));
    const { system, tools } = call.request;
    const editing = deps.contextEditing ? { contextEditing: deps.contextEditing } : {};
    return deps.model.generate({ model: call.model, maxTokens: call.maxTokens, system, tools, messages: modelMessages(call.conversation), ...editing, ...options });
  };
  const clock = deps.clock ?? (() => new Date());
  const startedAt = clock();
  const response = await attempt(0, {});
  const ms = clock().getTime() - startedAt.getTime();

  // Store the answer, written once: another attempt of this same step that got there first wins.
  if (response.message.content.length === 0) {
    throw new ModelResponseEmpty(`The model returned no content (stop_reason "${response.stopReason}").`);
  }
  const stored: StoredMessage = {
    seq: call.seq,
    role: 'assistant',
    content: response.message.content,
    meta: { runId: input.runId, iteration: input.iteration, stopReason: response.stopReason, usage: response.usage, model: response.model, startedAt: startedAt.toISOString(), ms },
  };
  if (await deps.conversations.append(step.conversationId, { ...stored, carries: undefined })) {
    return settle(step, features, stored, { ...call.conversation, messages: [...call.conversation.messages, stored] });
  }
  const reloaded = await deps.conversations.load(step.conversationId);
  const winner = findStep(reloaded.messages, input.runId, input.iteration);
  if (!winner) throw new StepStateInvalid(`Message ${call.seq} of ${step.conversationId} was taken by another step.`);
  return settle(step, features, winner, reloaded);
}
