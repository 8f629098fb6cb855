/**
 * The spans of a run that ended (docs/traces.md, "One trace per run"): its own span and one per
 * agent, described once the run is over, from what is stored: the run record (when it began and
 * ended, how, what it spent) and its agents' answers (when each model call began and how long it
 * took). A run spans many Lambda invocations and no one of them sees it whole, so these spans are
 * sent at its end, with the ids fixed at intake (`trace.spanId`) and derived from the run and
 * place: the steps' spans, sent earlier, already name them as parents. A repeated end event sends
 * the same spans again, with the same ids.
 */
import * as z from 'zod';
import { conversationIdOf } from '../conversation/conversation.js';
import { eventSource, runCancelledDetailType, runFailedDetailType, runSucceededDetailType } from '../runs/events.js';
import type { ConversationStore } from '../conversation/types.js';
import { descendantsOf } from '../runs/descendants.js';
import { placesOf, type Run, type RunStore } from '../runs/types.js';
import { agentSpan, runSpan } from './spans.js';
import type { SpanRecord, TraceSettings } from './types.js';

/** The rule's event pattern: the run completion events the orchestrator puts on Stepwise's bus. */
export const runEndedPattern = {
  source: [eventSource],
  detailType: [runSucceededDetailType, runFailedDetailType, runCancelledDetailType],
};

/** A completion event, as far as it is read here: the run it names. */
const RunEnded = z.object({
  source: z.literal(eventSource),
  'detail-type': z.enum([runSucceededDetailType, runFailedDetailType, runCancelledDetailType]),
  detail: z.object({ runId: z.string().min(1) }),
});

/** The run a completion event names; undefined for any other event. */
export function endedRunOf(event: unknown): string | undefined {
  const parsed = RunEnded.safeParse(event);
  return parsed.success ? parsed.data.detail.runId : undefined;
}

export interface RunEndedDeps {
  runs: Pick<RunStore, 'get'>;
  conversations: Pick<ConversationStore, 'load'>;
  traces: TraceSettings;
}

/**
 * Describes and emits the ended run's spans; none for a run still running, untraced or unsampled.
 * A run that did not succeed may have ended with calls of agents unanswered, whose tool steps
 * would have sent their children's spans: its ended descendants' go with it. Answers how many.
 */
export async function traceEndedRun(runId: string, deps: RunEndedDeps): Promise<number> {
  if (!deps.traces.tracer.enabled) return 0;
  const run = await deps.runs.get(runId);
  if (!run?.trace?.sampled || run.status === 'running') return 0;
  const spans = await endedRunSpans(run, deps);
  for (const span of spans) deps.traces.tracer.emit(span);
  return spans.length + (run.status === 'succeeded' ? 0 : await traceEndedDescendants(run, deps));
}

/**
 * Emits the spans of a run's descendants that have ended, at any depth; one still running is left
 * to whatever ends it. A child whose call was answered sends its spans again, with the same ids.
 * Answers how many.
 */
export async function traceEndedDescendants(run: Run, deps: RunEndedDeps): Promise<number> {
  let sent = 0;
  for await (const { record } of descendantsOf(run, deps.runs)) {
    if (!record?.trace?.sampled || record.status === 'running') continue;
    const spans = await endedRunSpans(record, deps);
    for (const span of spans) deps.traces.tracer.emit(span);
    sent += spans.length;
  }
  return sent;
}

/** The run's span and its agents' spans (the agents that answered at least once). */
export async function endedRunSpans(run: Run, deps: Pick<RunEndedDeps, 'conversations' | 'traces'>): Promise<SpanRecord[]> {
  const trace = run.trace;
  if (!trace) return [];
  const runStart = new Date(run.createdAt);
  const runEnd = new Date(run.updatedAt);
  const error = run.error ? { type: run.error.code, message: run.error.message } : undefined;
  const spans: SpanRecord[] = [];
  for (const place of placesOf(run)) {
    const conversationId = conversationIdOf(run.runId, place, run.sessionId, run.owner);
    const { messages } = await deps.conversations.load(conversationId);
    const answers = messages.filter((m) => m.role === 'assistant' && m.meta.runId === run.runId && m.meta.startedAt !== undefined);
    const first = answers[0];
    const last = answers.at(-1);
    if (!first?.meta.startedAt || !last?.meta.startedAt) continue;
    const failedHere = error && run.error?.agent === place;
    const lastEnd = new Date(new Date(last.meta.startedAt).getTime() + (last.meta.ms ?? 0));
    const definition = run.agents?.find((agent) => agent.place === place && !agent.callee);
    const usage = run.usageByAgent?.[place];
    spans.push(
      agentSpan(trace, {
        runId: run.runId,
        agent: place,
        ...(definition ? { definition: { name: definition.name, version: definition.version } } : {}),
        conversationId,
        provider: deps.traces.provider,
        startTime: new Date(first.meta.startedAt),
        // An agent that failed worked until the run ended (its last tools, its failed call).
        endTime: failedHere ? runEnd : lastEnd,
        ...(usage ? { usage } : {}),
        ...(failedHere ? { error } : {}),
      }),
    );
  }
  spans.push(
    runSpan(trace, {
      runId: run.runId,
      name: run.workflow?.name ?? run.agent?.name ?? run.mode,
      status: run.status,
      startTime: runStart,
      endTime: runEnd,
      usage: run.usage,
      ...(error ? { error } : {}),
    }),
  );
  return spans;
}
