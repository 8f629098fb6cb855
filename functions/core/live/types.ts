/**
 * Live text's records and ports: what the model has generated so far, written while it
 * generates, and read by the event stream (docs/events.md, "Live text").
 */
import * as z from 'zod';
import { AgentName } from '../agents/types.js';

/** Text generated since the previous write, of one content block of the answer. */
export const LiveChunk = z.discriminatedUnion('kind', [
  z.object({ block: z.number().int().nonnegative(), kind: z.literal('text'), delta: z.string() }),
  z.object({
    block: z.number().int().nonnegative(),
    kind: z.literal('tool_use'),
    id: z.string(),
    name: z.string(),
    /** More of the call's input, as JSON text. */
    delta: z.string(),
  }),
]);

export type LiveChunk = z.infer<typeof LiveChunk>;

/** `<Date.now() padded to 13 digits>-<6 random base36 characters>`: sorts by start time. */
export const AttemptId = z.string().regex(/^\d{13}-[0-9a-z]{6}$/);

/** One model call's answer so far, for the assistant message that will have `seq` in `agent`'s conversation. */
export const LiveAttempt = z.object({
  runId: z.string().min(1),
  agent: AgentName,
  seq: z.number().int().nonnegative(),
  attempt: AttemptId,
  chunks: z.array(LiveChunk),
  updatedAt: z.string(),
});

export type LiveAttempt = z.infer<typeof LiveAttempt>;

/** Where live attempts are written: each write replaces the attempt's item whole. */
export interface LiveText {
  write(attempt: LiveAttempt, options?: { signal?: AbortSignal }): Promise<void>;
}

/** Reads a run's live attempts (the event stream). */
export interface LiveTextReader {
  /** The run's attempts in key order (`liveSortKey`), only those after `afterSk` when given. */
  list(runId: string, afterSk?: string): Promise<LiveAttempt[]>;
}

export interface LivePolicy {
  /** The least time between two writes, and before the first (a fast model writes nothing). */
  intervalMs: number;
  /** Chunks stop growing at this many bytes (their JSON); the stored message brings the rest. */
  maxChunkBytes: number;
  /** How long the step waits for a write under way before it stores its message; then the write is abandoned. */
  settleTimeoutMs: number;
  /** Consecutive failed writes after which an attempt writes no more. */
  maxFailures: number;
  /** Where a failed write is told. */
  log: (message: string, detail: Record<string, unknown>) => void;
}

/** The attempt's identity: which message it becomes, and which model call it is. */
export type LiveKey = Pick<LiveAttempt, 'runId' | 'agent' | 'seq' | 'attempt'>;

/** Where a read of live attempts starts: an agent's attempts from `seq` (and, within it, from `attempt`) on. */
export interface LiveFrom {
  agent: AgentName;
  seq: number;
  /** Within `seq`, the first attempt to read; every attempt of `seq` when absent. */
  attempt?: string;
}

/** Reads live attempts (the stream's side of the live text items). */
export interface LiveTexts {
  /** The agent's attempts from `from` on, in key order (seq, then attempt), read consistently. */
  list(runId: string, from: LiveFrom): Promise<LiveAttempt[]>;
}
