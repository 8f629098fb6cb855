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

/**
 * Context editing (Anthropic's `clear_tool_uses_20250919`): old tool results cleared from what the
 * model is sent once the prompt passes `triggerTokens`, before compaction is needed.
 */
export const ContextEditing = z.object({
  /** Clear once the prompt is over this many input tokens. */
  triggerTokens: z.number().int().positive(),
  /** The results of the newest calls kept whole. */
  keepToolUses: z.number().int().nonnegative(),
  /** Clear in batches of at least this many tokens, so each clearing is worth the cache it invalidates. */
  clearAtLeastTokens: z.number().int().positive().optional(),
  /** Tools whose results are never cleared. */
  excludeTools: z.array(z.string().min(1)).optional(),
});

export type ContextEditing = z.infer<typeof ContextEditing>;

/**
 * At 60% of the default window (compaction starts at 80%), keeping the five newest results, in
 * batches of at least 20K tokens (a tenth of the window: one cache write buys many reads).
 */
export const defaultContextEditing: ContextEditing = { triggerTokens: 120_000, keepToolUses: 5, clearAtLeastTokens: 20_000 };
