/**
 * The inference step of the agent loop, as a function over the ports: the state machine (or the
 * local loop driver) calls it; it is idempotent under retry (invariant 3, docs/ARCHITECTURE.md).
 */
import * as z from 'zod';
import {
  type ContextPolicy,
  chooseCut,
  defaultContextPolicy,
  modelMessages,
  needsCompaction,
  refusedPolicy,
  summaryRequestMessages,
} from '../compaction.js';
import { type AgentProfile, agentProfile, openingMessage } from '../agents.js';
import { ApprovalPolicyInvalid, type ApprovalStore } from '../approvals.js';
import { BudgetExceeded, type BudgetSettings, type SpendStore, dailyBudgetSpent, dayOf, notRunForBudget, runBudgetSpent } from '../budgets.js';
import {
  type Compaction,
  type Conversation,
  type ConversationStore,
  type NewMessage,
  type StoredMessage,
  callKey,
  conversationIdOf,
} from '../conversation.js';
import { NotFound, StepStateInvalid } from '../errors.js';
import { type LivePolicy, type LiveText, LiveTextWriter, newAttemptId } from '../live.js';
import {
  type ContentBlock,
  StopReason,
  type ToolResultBlock,
  type ToolUseBlock,
  textBlock,
  textOf,
  toolResult,
  toolUses,
} from '../messages.js';
import {
  ContextWindowExceeded,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  ModelResponseEmpty,
  type ModelSettings,
} from '../model.js';
import { AgentName } from '../names.js';
import { answersRun, checkAnswer, finalAnswerNudge, finalAnswerSpec, finalAnswerSystemNote, finalAnswerTool } from '../output.js';
import { estimateCost } from '../prices.js';
import type { Run, RunResult, RunStore, RunTotals } from '../runs.js';
import { type ExternalTools, type ToolCatalog, externalSpecs, mcpServerOf, unavailableNote, unlistedPolicyTools } from '../tools/external.js';

export const InferenceInput = z.object({
  runId: z.string().min(1),
  agent: AgentName,
  iteration: z.number().int().nonnegative(),
  /** Defaults to the run's own conversation for this agent; a session names its own. */
  conversationId: z.string().min(1).optional(),
  /** The model the run asked for; empty or absent for the deployment's default. */
  model: z.string().optional(),
  /** The agent's iteration limit: a step at it answers `iteration_limit` before it reads anything (invariant 9). */
  maxIterations: z.number().int().positive().optional(),
  /**
   * Where this execution of the loop hands over to a fresh one (continue-as-new, docs/ARCHITECTURE.md): a step at it
   * returns `continue` at once, and the fresh execution runs it.
   */
  segmentEnd: z.number().int().positive().optional(),
});
export type InferenceInput = z.infer<typeof InferenceInput>;

export const ToolCallRef = z.object({
  id: z.string(),
  name: z.string(),
  /** Whether the call waits for a reviewer's decision before it runs. */
  needsApproval: z.boolean(),
});

/** What the state machine carries between states: ids and a few numbers (invariant 1, docs/ARCHITECTURE.md). */
export const InferenceResult = z.object({
  /**
   * The model's stop reason, or `answer_required`: the turn ended without the `final_answer` a
   * structured-output run needs, so the loop goes on and the next step asks for it.
   */
  stopReason: z.union([StopReason, z.literal('answer_required')]),
  /** The calls to run now; empty unless `stopReason` is `tool_use`. */
  toolCalls: z.array(ToolCallRef),
  /** Whether any of `toolCalls` waits for a reviewer: the loop runs such a turn's calls through its gate. */
  gated: z.boolean(),
  iteration: z.number().int().nonnegative(),
  /** The iteration the loop runs next (the state machine carries no counter of its own). */
  next: z.number().int().nonnegative(),
  /** The sequence number of the stored assistant message, for the tool steps. */
  seq: z.number().int().nonnegative(),
});
export type InferenceResult = z.infer<typeof InferenceResult>;

/**
 * A step at one of the loop's bounds, which did nothing: at `maxIterations` (`iteration_limit`: the
 * run fails with `MaxIterationsExceeded`), or at its execution's `segmentEnd` (`continue`: a fresh
 * execution runs this iteration, continue-as-new).
 */
export interface LoopBound {
  stopReason: 'iteration_limit' | 'continue';
  toolCalls: [];
  gated: false;
  iteration: number;
  next: number;
}

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

export interface InferenceDeps {
  conversations: ConversationStore;
  runs: RunStore;
  model: ModelProvider;
  settings: ModelSettings;
  profile?: (agent: AgentName) => AgentProfile;
  /** When to compact the conversation; Claude's 200K window by default. */
  context?: ContextPolicy;
  /** Which tools need approval in a run; none when absent. */
  approvals?: Pick<ApprovalStore, 'toolsFor'>;
  /** MCP and Lambda tools, listed once per run; none when absent. */
  externalTools?: Pick<ExternalTools, 'forRun'>;
  /** The daily limit per caller; none when absent. A run's own budget is on its record. */
  budgets?: Pick<BudgetSettings, 'dailyMaxUsd'>;
  /** What each caller's runs cost per day (needed for the daily limit). */
  spend?: SpendStore;
  clock?: () => Date;
  /** Where the answer is written while the model generates it; no live text when absent. */
  liveText?: LiveText;
  /** Pacing of live text and where its failures are logged; `defaultLivePolicy` when absent. */
  livePolicy?: Partial<LivePolicy>;
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
 * Summarizes the turns before a cut and stores the summary (once per cut), so this and every
 * later request of the conversation starts with it. `undefined` when there is nothing to cut.
 */
async function compact(
  conversation: Conversation,
  conversationId: string,
  request: Pick<ModelRequest, 'system' | 'tools'>,
  model: string,
  input: InferenceInput,
  deps: InferenceDeps,
  policy: ContextPolicy,
): Promise<Conversation | undefined> {
  const cut = chooseCut(conversation, policy);
  const last = conversation.messages.at(-1);
  if (cut === undefined || !last) return undefined;
  // The same system prompt and tools as the step's own request, so the summary call hits the cache.
  // No live text: the summary is no message of the conversation, and no watcher is shown it.
  const response = await deps.model.generate({
    model,
    maxTokens: deps.settings.maxTokens,
    ...request,
    messages: summaryRequestMessages(conversation, cut),
  });
  const summary = textOf(response.message).trim();
  if (!summary) throw new ModelResponseEmpty('The model returned no summary when asked to compact the conversation.');
  const compaction = await deps.conversations.putCompaction(conversationId, {
    fromSeq: cut,
    atSeq: last.seq,
    summary,
    runId: input.runId,
    iteration: input.iteration,
    usage: response.usage,
    model: response.model,
  });
  return { ...conversation, compaction };
}

/** The compaction, if this very step made it (a retried step finds it stored). */
function madeBy(compaction: Compaction | undefined, input: InferenceInput): Compaction | undefined {
  return compaction?.runId === input.runId && compaction.iteration === input.iteration ? compaction : undefined;
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

/** Stops the run when its approval policy names an MCP tool the run's catalog does not list (`unlistedPolicyTools`). */
async function checkPolicyNames(catalog: ToolCatalog | undefined, runId: string, deps: InferenceDeps): Promise<void> {
  if (!catalog || !deps.approvals || !catalog.tools.some((tool) => mcpServerOf(tool.name) !== undefined)) return;
  const unlisted = unlistedPolicyTools(await deps.approvals.toolsFor(runId), catalog);
  if (!unlisted.length) return;
  const servers = new Set(unlisted.map(mcpServerOf));
  const offered = catalog.tools.filter((tool) => servers.has(mcpServerOf(tool.name))).map((tool) => tool.name);
  throw new ApprovalPolicyInvalid(
    `The run's approval policy names ${unlisted.join(', ')}, which ${unlisted.length > 1 ? 'are' : 'is'} not among the tools its MCP server lists (${offered.join(', ') || 'none'}); the run stops rather than let the tool it meant run without approval.`,
  );
}

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

function findStep(messages: StoredMessage[], runId: string, iteration: number): StoredMessage | undefined {
  return messages.findLast(
    (m) => m.role === 'assistant' && m.meta.runId === runId && m.meta.iteration === iteration,
  );
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
function withAppended(conversation: Conversation, planned: PlannedUserMessage): Conversation {
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

function nextSeq(messages: StoredMessage[]): number {
  const last = messages.at(-1);
  return last ? last.seq + 1 : 0;
}

// Budgets and structured output (docs/ARCHITECTURE.md, "Budgets", "Structured output").

/** What a step needs of its run record besides the conversation. */
type RunControls = Pick<Run, 'runId' | 'owner' | 'createdAt' | 'budget' | 'output' | 'usage' | 'estimatedCostUsd'>;

/** Runs without a budget whose controls this warm function has read, per store (at most 100 each). */
const knownRuns = new WeakMap<RunStore, Map<string, RunControls>>();

/**
 * The run's controls. Its owner, day and output schema never change, so a warm function reads a
 * run without a budget once; a run with one is read on every step, for what it has spent. The
 * record itself too, when it was read (an agent's first step opens with its goal or plan).
 */
async function runControls(runId: string, deps: InferenceDeps): Promise<{ controls?: RunControls; record?: Run }> {
  let known = knownRuns.get(deps.runs);
  if (!known) knownRuns.set(deps.runs, (known = new Map()));
  const cached = known.get(runId);
  if (cached) return { controls: cached };
  const run = await deps.runs.get(runId);
  if (!run) return {};
  const { owner, createdAt, budget, output, usage, estimatedCostUsd } = run;
  const controls = { runId, ...(owner ? { owner } : {}), createdAt, ...(budget ? { budget } : {}), ...(output ? { output } : {}), usage, ...(estimatedCostUsd !== undefined ? { estimatedCostUsd } : {}) };
  if (!budget) {
    if (known.size >= 100) known.delete(known.keys().next().value ?? '');
    known.set(runId, controls);
  }
  return { controls, record: run };
}

/** The output schema the agent must answer with, if the run asked for one and this agent answers it. */
function answerSchema(run: RunControls | undefined, agent: AgentName): Record<string, unknown> | undefined {
  return run?.output && answersRun(agent) ? run.output.schema : undefined;
}

/** The step's request with the `final_answer` tool and its note, when the agent must answer with it (the same bytes every step). */
function withFinalAnswer(request: Pick<ModelRequest, 'system' | 'tools'>, schema: Record<string, unknown> | undefined): Pick<ModelRequest, 'system' | 'tools'> {
  if (!schema) return request;
  return { system: request.system + finalAnswerSystemNote, tools: [...request.tools, finalAnswerSpec(schema)] };
}

/** The message that asks for `final_answer`, when the run's last turn ended without it. */
function answerMissing(conversation: Conversation, runId: string): ContentBlock[] | undefined {
  const last = conversation.messages.at(-1);
  const ended = last?.meta.stopReason === 'end_turn' || last?.meta.stopReason === 'stop_sequence';
  return last?.role === 'assistant' && last.meta.runId === runId && ended && toolUses(last).length === 0
    ? [textBlock(finalAnswerNudge)]
    : undefined;
}

/** Stores the answers to a turn's `final_answer` calls (once: a retry finds them stored). */
async function answerFinalCalls(
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

/** Counts a summary call of this step (once, however often this runs), then stops the run if that spent its budget. */
async function countSummary(summary: Compaction, input: InferenceInput, deps: InferenceDeps, run: RunControls | undefined): Promise<void> {
  const costUsd = estimateCost(summary.model, summary.usage);
  const totals = await deps.runs.recordStep(input.runId, input.agent, input.iteration, {
    usage: summary.usage,
    ...(costUsd !== undefined ? { costUsd } : {}),
    call: 'summary',
  });
  await stopIfSpent(run, input, deps, totals ?? 'read');
}

/**
 * Ends the run with `BudgetExceeded` once its budget, or its owner's daily budget, is spent:
 * checked before each model call (`spent` is `before`: the run as the step read it) and after
 * each call was counted (the run's totals as the count answered them, or `read`: read again,
 * when the count found the call counted already), its cost copied into its owner's daily counter
 * first. The calls of `turn`, the turn that crossed the budget, are answered as not run, so none
 * of them runs and the conversation stays whole.
 */
async function stopIfSpent(
  run: RunControls | undefined,
  input: InferenceInput,
  deps: InferenceDeps,
  spent: 'before' | 'read' | RunTotals,
  turn?: StoredMessage,
): Promise<void> {
  const daily = deps.budgets?.dailyMaxUsd !== undefined && deps.spend !== undefined && run?.owner !== undefined;
  if (!run || (!run.budget && !daily)) return;
  const counted = spent !== 'before';
  // A cached run (one without a budget) holds no current spend: after a counted call, its totals.
  const current: RunControls =
    spent === 'before' ? run : spent === 'read' ? ((await deps.runs.get(run.runId)) ?? run) : { ...run, ...spent };
  let reason = runBudgetSpent(current);
  if (daily && deps.spend && current.owner) {
    const cost = current.estimatedCostUsd ?? 0;
    if (counted && cost > 0) await deps.spend.recordRun(current.owner, dayOf(current.createdAt), current.runId, cost);
    const today = dayOf((deps.clock ?? (() => new Date()))());
    reason ??= dailyBudgetSpent(await deps.spend.spentOn(current.owner, today), deps.budgets?.dailyMaxUsd, today);
  }
  if (!reason) return;
  if (turn) {
    const conversationId = input.conversationId ?? conversationIdOf(input.runId, input.agent);
    const note = notRunForBudget(reason);
    for (const [index, call] of toolUses(turn).entries()) {
      await deps.conversations.putResult(conversationId, turn.seq, index, toolResult(call.id, note, true), { ran: false });
    }
  }
  throw new BudgetExceeded(reason);
}
