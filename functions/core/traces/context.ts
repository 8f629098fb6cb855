/**
 * Trace ids of a run: made at intake (a child of the caller's `traceparent` when it sent one),
 * and the span ids of its steps derived from the step keys, so a retried step names the same span.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { RunTrace } from './types.js';

const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A W3C `traceparent` header's trace id, span id and sampled flag; undefined for an absent or malformed one (ignored, as the spec says). */
export function parseTraceparent(header: string | undefined): { traceId: string; spanId: string; sampled: boolean } | undefined {
  const match = traceparentPattern.exec((header ?? '').trim().toLowerCase());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** The `traceparent` that names a span of the run's trace. */
export function traceparentOf(trace: Pick<RunTrace, 'traceId' | 'sampled'>, spanId: string): string {
  return `00-${trace.traceId}-${spanId}-${trace.sampled ? '01' : '00'}`;
}

/** A new run's trace: the caller's trace when it sent a `traceparent`, else a new one; the run's own span id is new either way. */
export function newRunTrace(traceparent: string | undefined, random: (bytes: number) => Buffer = randomBytes): RunTrace {
  const parent = parseTraceparent(traceparent);
  const spanId = random(8).toString('hex');
  if (parent) return { traceId: parent.traceId, spanId, parentSpanId: parent.spanId, sampled: parent.sampled };
  return { traceId: random(16).toString('hex'), spanId, sampled: true };
}

/**
 * A child run's trace (a call of an agent): the parent's trace, its run span a child of the
 * parent's \`execute_tool\` span for the call, its id derived from the child run, so a retried
 * step that makes the child again names the same span.
 */
export function childRunTrace(parent: RunTrace, parentRunId: string, toolUseId: string, childRunId: string): RunTrace {
  return { traceId: parent.traceId, spanId: spanIdOf(parent.traceId, childRunId, 'run'), parentSpanId: toolSpanId(parent, parentRunId, toolUseId), sampled: parent.sampled };
}

/** A span id derived from the trace and a step's keys: the same keys, the same span, however often the step runs. */
export function spanIdOf(traceId: string, ...keys: (string | number)[]): string {
  const id = createHash('sha256').update([traceId, ...keys].join('\u0000')).digest('hex').slice(0, 16);
  // An all-zero id is invalid; vanishingly unlikely, but never sent.
  return /^0+$/.test(id) ? '0000000000000001' : id;
}

/** The span of an agent's part of a run (`invoke_agent`): the parent of its model and tool calls. */
export function agentSpanId(trace: Pick<RunTrace, 'traceId'>, runId: string, agent: string): string {
  return spanIdOf(trace.traceId, runId, 'agent', agent);
}

/** The span of a step's model call (`chat`); `call` counts the calls of one step (a retry after "prompt is too long"). */
export function chatSpanId(trace: Pick<RunTrace, 'traceId'>, runId: string, agent: string, iteration: number, call = 0): string {
  return spanIdOf(trace.traceId, runId, 'chat', agent, iteration, call);
}

/** The span of a tool call (`execute_tool`). */
export function toolSpanId(trace: Pick<RunTrace, 'traceId'>, runId: string, toolUseId: string): string {
  return spanIdOf(trace.traceId, runId, 'tool', toolUseId);
}
