/**
 * Live text: what the inference step stores of an answer while the model is still writing it,
 * so watchers of a run see the text before the step ends (docs/ARCHITECTURE.md, "The event
 * stream"). One item per attempt (one model call), keyed by the agent, the sequence number the
 * answer will have in its conversation, and the attempt:
 *
 *   pk = live#<runId>, sk = <agent>#<seqKey(seq)>#<attempt>
 *
 * An item only grows: each flush appends chunks and never changes the ones before. The final
 * assistant message is stored as always; a live item is never the record of what was said.
 */
import * as z from 'zod';
import { AgentName } from './names.js';

/** A piece of one content block of the answer being generated, in the order the model wrote it. */
export const LiveChunk = z.discriminatedUnion('kind', [
  z.object({ block: z.number().int().nonnegative(), kind: z.literal('text'), delta: z.string() }),
  z.object({
    block: z.number().int().nonnegative(),
    kind: z.literal('tool_use'),
    id: z.string().min(1),
    name: z.string(),
    /** A piece of the call's input as JSON text (the model's `input_json_delta`). */
    delta: z.string(),
  }),
]);
export type LiveChunk = z.infer<typeof LiveChunk>;

/** One model call's text so far. */
export const LiveAttempt = z.object({
  runId: z.string(),
  agent: AgentName,
  /** The sequence number the assistant message will have in the agent's conversation. */
  seq: z.number().int().nonnegative(),
  /** `<Date.now() padded to 13 digits>-<6 base36 characters>`, chosen once per model call: later attempts sort later. */
  attempt: z.string().regex(/^\d{13}-[0-9a-z]{6}$/),
  chunks: z.array(LiveChunk),
  updatedAt: z.string(),
});
export type LiveAttempt = z.infer<typeof LiveAttempt>;

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
