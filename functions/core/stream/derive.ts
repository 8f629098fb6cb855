/**
 * The event stream of a run, derived from what is stored: the run record, this run's messages
 * and tool results in each agent's conversation, the approvals, and the live attempts
 * (docs/events.md, "How the stream is derived").
 *
 * `deriveRunEvents` is a pure function of what has been read so far. It emits only events that no
 * later read can put anything before: when the store grows, the events derived from it grow by
 * appending; they are never changed or reordered. So every watcher, every reconnect and every
 * process derives the same sequence, and each event's cursor (its position in that sequence)
 * means the same everywhere. The reader (`reader.ts`) keeps the read order that makes "what has
 * been read" safe to derive from.
 */
import { type AGUIEvent, EventType, type RunErrorEvent, type RunFinishedEvent } from '@ag-ui/core';
import { type Approval } from '../approvals/types.js';
import { notesOf } from '../approvals/views.js';
import type { LiveAttempt } from '../live/types.js';
import { isText, isToolUse, toolUses } from '../model/messages.js';
import type { AgentName } from '../agents/types.js';
import { phaseOf } from '../agents/phases.js';
import { calleesOf, childRunIdOf } from '../children/children.js';
import { agentToolName, placeOf } from '../definitions/definition.js';
import { estimateCost } from '../model/prices.js';
import { custom, idsOf, type MessageIds, Sequence, textContent, textEnd, textStart, toolArgs, toolEnd, toolStart } from './agui.js';
import { agentsOf } from './cursor.js';
import { attemptForm, type AttemptForm, closeBlocks, continuation, type OpenBlock } from './live.js';
import type { AgentView, Derivation, StreamMessage, StreamState, Wait } from './types.js';

// ---------------------------------------------------------------------------------------------
// The derivation
// ---------------------------------------------------------------------------------------------

/** The stream's events from what has been read (see the module comment). */
export function deriveRunEvents(state: StreamState): Derivation {
  const { run } = state;
  const agents = agentsOf(run);
  const sequence = new Sequence(agents);
  const terminal = run.status !== 'running';
  const threadId = run.sessionId ?? run.runId;
  const waiting = (wait: Wait): Derivation => ({ events: sequence.events, done: false, wait });

  const header = sequence.group({ kind: 'header' });
  header({ type: EventType.RUN_STARTED, threadId, runId: run.runId });
  header(
    custom('run', {
      runId: run.runId,
      mode: run.mode,
      goal: run.goal,
      // What the run follows, as GET /runs/{runId} shows it: a watcher need not read the record for it.
      ...(run.agent ? { agent: run.agent } : {}),
      ...(run.workflow ? { workflow: run.workflow } : {}),
      ...(run.sessionId ? { sessionId: run.sessionId } : {}),
      createdAt: run.createdAt,
    }),
  );

  // The Architect's part is over once it handed over to the Coder: the orchestrator records
  // that as the phase (which moves on from there only to the run's end). An agent of a team's
  // workflow hands over its answer (`agentResults`) when its part is over.
  const handedOverBy = (agent: AgentName) =>
    agent === 'architect' ? run.phase === 'executing' || run.phase === 'complete' || run.status === 'succeeded' : run.agentResults?.[agent] !== undefined;
  for (let k = 0; k < agents.length; k++) {
    const agent = agents[k] as AgentName;
    const view = state.agents[agent];
    const last = k === agents.length - 1;
    if (k > 0) {
      // A later agent's step starts with its first message: a run that ends before it has none.
      if (!view) return waiting({ agent, decisionOnly: false });
      if (view.messages.size === 0 && view.attempts.size === 0) {
        if (terminal) break;
        return waiting({ agent, decisionOnly: false });
      }
    }
    const open = sequence.group({ kind: 'open', agent: k });
    open({ type: EventType.STEP_STARTED, stepName: agent });
    if (run.mode === 'multi') open(custom('phase', { phase: phaseOf(agent), agent }));
    if (!view) return waiting({ agent, decisionOnly: false });

    const over = last ? terminal : terminal || handedOverBy(agent);
    const slots = [...new Set([...[...view.messages].filter(([, m]) => m.role === 'assistant').map(([seq]) => seq), ...view.attempts.keys()])].sort(
      (a, b) => a - b,
    );
    for (const seq of slots) {
      // An answer being written is shown only once the message it answers has been read: a live
      // attempt can be read before the messages before it (the attempts are read after the
      // conversation, and the conversation may have grown in between), and nothing may come
      // before it later.
      // (A resumed stream does not read what it left behind; a section that is over has been read whole.)
      const prompted = view.messages.has(seq) || view.messages.has(seq - 1) || seq - 1 < view.fromSeq || over;
      if (!prompted) return waiting({ agent, decisionOnly: false });
      const wait = deriveSlot(sequence.group({ kind: 'slot', agent: k, seq }), { state, agent, view, seq, over });
      if (wait) return waiting(wait);
    }
    if (!over) return waiting({ agent, decisionOnly: false });
    const close = sequence.group({ kind: 'close', agent: k });
    if (agent === 'architect' && run.plan) close(custom('plan', { plan: run.plan }));
    close({ type: EventType.STEP_FINISHED, stepName: agent });
  }

  // The last agent's step closes only once the run has ended: here the run has.
  const end = sequence.group({ kind: 'end' });
  end(
    custom('run_ended', {
      status: run.status,
      phase: run.phase,
      ...(run.error ? { error: run.error } : {}),
      usage: run.usage,
      estimatedCostUsd: run.estimatedCostUsd ?? 0,
      ...(run.result ? { result: run.result } : {}),
    }),
  );
  if (run.status === 'failed') {
    end({ type: EventType.RUN_ERROR, message: run.error?.message ?? 'The run failed.', code: run.error?.code ?? 'RunFailed' } satisfies RunErrorEvent);
  } else if (run.status === 'cancelled') {
    end({ type: EventType.RUN_FINISHED, threadId, runId: run.runId, outcome: { type: 'cancelled' } } satisfies RunFinishedEvent);
  } else {
    end({ type: EventType.RUN_FINISHED, threadId, runId: run.runId, ...(run.result ? { result: run.result } : {}) } satisfies RunFinishedEvent);
  }
  return { events: sequence.events, done: true };
}

interface SlotContext {
  state: StreamState;
  agent: AgentName;
  view: AgentView;
  seq: number;
  /** The agent's section is over (the run ended, or the agent handed over): nothing more comes. */
  over: boolean;
}

/**
 * The events of one slot: the message's abandoned live attempts, the message (its live text and
 * the rest), its usage, then its calls in call order, each with its approval and result.
 * `undefined` when the slot is complete; else what it waits for.
 */
function deriveSlot(emit: (event: AGUIEvent) => void, context: SlotContext): Wait | undefined {
  const { state, agent, view, seq, over } = context;
  const { run } = state;
  const stored = view.messages.get(seq);
  const message = stored?.role === 'assistant' ? stored : undefined;
  const attempts = view.attempts.get(seq) ?? [];
  const settled = seq < view.liveSettledTo;
  const read = { agent, decisionOnly: false } as const;
  // A stored answer is shown only once its live attempts were read after it: they are final then.
  if (message && !settled) return read;

  const abandon = (form: AttemptForm, ids: MessageIds, attempt: LiveAttempt) => {
    for (const event of form.events) emit(event);
    const tail: AGUIEvent[] = [];
    closeBlocks(form.blocks, tail);
    for (const event of tail) emit(event);
    emit(custom('attempt_abandoned', { messageId: ids.message, agent, seq, attempt: attempt.attempt }));
  };
  const attemptIds = (index: number, attempt: LiveAttempt) => idsOf(run, agent, seq, index === 0 ? undefined : attempt.attempt);
  for (const [index, attempt] of attempts.slice(0, -1).entries()) {
    const ids = attemptIds(index, attempt);
    const form = attemptForm(attempt, ids);
    // Not read since a later attempt appeared: its last flush may not have been in that read.
    if (!settled && !view.finalAttempts.has(attempt.attempt)) {
      for (const event of form.events) emit(event);
      return read;
    }
    abandon(form, ids, attempt);
  }

  const latest = attempts.at(-1);
  if (!message) {
    if (!latest) return undefined;
    const ids = attemptIds(attempts.length - 1, latest);
    const form = attemptForm(latest, ids);
    // Another message took this place, or the section ended without this answer: it was abandoned.
    const later = settled && [...view.messages.keys()].some((other) => other >= seq);
    if (later || (over && view.liveFresh)) {
      abandon(form, ids, latest);
      return undefined;
    }
    for (const event of form.events) emit(event);
    return read;
  }

  if (!latest) {
    storedBlocks(emit, message, idsOf(run, agent, seq), new Map());
  } else {
    const ids = attemptIds(attempts.length - 1, latest);
    const form = attemptForm(latest, ids);
    const rests = continuation(form, message);
    if (rests) {
      for (const event of form.events) emit(event);
      storedBlocks(emit, message, ids, form.blocks, rests);
    } else {
      abandon(form, ids, latest);
      storedBlocks(emit, message, idsOf(run, agent, seq, 'final'), new Map());
    }
  }
  const { usage, model } = message.meta;
  if (usage) {
    const cost = estimateCost(model ?? '', usage);
    emit(custom('usage', { agent, seq, usage, ...(model ? { model } : {}), ...(cost === undefined ? {} : { estimatedCostUsd: cost }) }));
  }
  return calls(emit, context, message);
}

/**
 * The stored message's blocks after what streamed live: the rest of each open block and its
 * end, then every block that did not stream, whole. Thinking and other blocks are not shown.
 */
function storedBlocks(
  emit: (event: AGUIEvent) => void,
  message: StreamMessage,
  ids: MessageIds,
  streamed: Map<number, OpenBlock>,
  rests: Map<number, string> = new Map(),
): void {
  // The parent of a call: the first text block before it, streamed or not.
  const parentOf = (index: number) => {
    const text = message.content.findIndex((b, i) => i < index && isText(b) && b.text !== '');
    return text >= 0 ? ids.text(text) : ids.message;
  };
  message.content.forEach((block, index) => {
    const open = streamed.get(index);
    if (open) {
      if (open.closed) return;
      open.closed = true;
      const rest = rests.get(index) ?? '';
      if (open.kind === 'text') {
        if (rest) emit(textContent(open.messageId, rest));
        emit(textEnd(open.messageId));
      } else {
        if (rest) emit(toolArgs(open.id, rest));
        emit(toolEnd(open.id));
      }
      return;
    }
    if (isText(block) && block.text !== '') {
      const messageId = ids.text(index);
      emit(textStart(messageId));
      emit(textContent(messageId, block.text));
      emit(textEnd(messageId));
    } else if (isToolUse(block)) {
      emit(toolStart(block.id, block.name, parentOf(index)));
      emit(toolArgs(block.id, JSON.stringify(block.input ?? {})));
      emit(toolEnd(block.id));
    }
  });
}

/**
 * A message's calls, in two passes, each in call order. First the approval requests, so every
 * call that waits for a reviewer at once is shown waiting at once: a call with an approval record
 * is requested, a call with a result and no record was never gated (the approvals are read after
 * the conversation, so a gated call's record is seen with its result), and a call with neither
 * yet holds the pass. Then the outcomes: a call's decision and its result, each call waiting for
 * the result of the one before it.
 */
function calls(emit: (event: AGUIEvent) => void, context: SlotContext, message: StreamMessage): Wait | undefined {
  const { state, agent, view, seq, over } = context;
  const results = view.results.get(seq) ?? [];
  const base = `${state.run.runId}:${agent}:${seq}`;
  const uses = toolUses(message);
  // Calls of agents (never gated): each starts a child run, whose id the call names.
  const callees = new Map(calleesOf(state.run).map((callee) => [agentToolName(callee.name), placeOf(callee.name)]));
  const child = (call: { id: string }) => ({ toolCallId: call.id, runId: childRunIdOf(state.run.runId, call.id) });
  for (const [index, call] of uses.entries()) {
    const approval = state.approvals.get(call.id);
    const callee = callees.get(call.name);
    if (callee !== undefined) {
      // A call of an agent started a child run once the run records it; a refused call (too deep,
      // no budget left) has its tool error instead, and starts nothing.
      if (state.run.children?.[call.id]) emit(custom('child_run_started', { ...child(call), agent: callee }));
      else if (!results[index] && !over) return { agent, decisionOnly: false };
    } else if (approval) {
      emit(
        custom('approval_requested', {
          toolCallId: call.id,
          tool: approval.name,
          input: approval.input,
          agent,
          ...(approval.inputTruncated ? { inputTruncated: true } : {}),
          ...(approval.gate ? { gate: approval.gate } : {}),
          requestedAt: approval.requestedAt,
        }),
      );
    } else if (!results[index] && !over) {
      // Gated or not, it is not known yet: its record or its result will say.
      return { agent, decisionOnly: false };
    }
  }
  for (const [index, call] of uses.entries()) {
    const approval = state.approvals.get(call.id);
    const stored = results[index];
    if (approval?.decision) emit(custom('approval_decided', decided(approval)));
    if (!stored) {
      // The run or the agent's part ended with this call unanswered: nothing more of this message.
      if (over) return undefined;
      return { agent, decisionOnly: approval !== undefined && approval.decision === undefined };
    }
    emit({ type: EventType.TOOL_CALL_RESULT, messageId: `${base}.r${index}`, toolCallId: call.id, content: stored.result.content, role: 'tool' });
    emit(custom('tool_result', { toolCallId: call.id, isError: stored.result.is_error === true, ran: stored.ran }));
    if (callees.has(call.name) && state.run.children?.[call.id]) emit(custom('child_run_ended', { ...child(call), isError: stored.result.is_error === true }));
  }
  return undefined;
}

/** A decision as the stream shows it. */
function decided(approval: Approval): Record<string, unknown> {
  return {
    toolCallId: approval.toolUseId,
    decision: approval.decision,
    decidedBy: approval.decidedBy ?? 'reviewer',
    ...(approval.decidedAt ? { decidedAt: approval.decidedAt } : {}),
    ...notesOf(approval),
  };
}
