/**
 * When to compact a conversation: the model's window and the shares that decide it.
 */
import * as z from 'zod';

export const ContextPolicy = z.object({
  /** The model's context window in tokens. */
  windowTokens: z.number().int().positive(),
  /** Compact when the conversation is estimated to fill more than this share of the window. */
  compactAt: z.number().positive().max(1),
  /** After compacting, keep about this share of the window as recent turns, verbatim. */
  keepShare: z.number().positive().max(1),
});

export type ContextPolicy = z.infer<typeof ContextPolicy>;

/** Claude's standard 200K window; compaction starts at 80%, keeping a quarter of the window verbatim. */
export const defaultContextPolicy: ContextPolicy = { windowTokens: 200_000, compactAt: 0.8, keepShare: 0.25 };
