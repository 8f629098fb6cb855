/**
 * The message model: Anthropic-shaped content blocks, as zod schemas.
 *
 * Assistant content is kept verbatim (invariant 12, docs/ARCHITECTURE.md): the block schemas are loose, so
 * fields this code does not know (citations, signatures, server-tool payloads) survive a
 * round trip through storage byte for byte.
 */
import * as z from 'zod';

export const TextBlock = z.looseObject({
  type: z.literal('text'),
  text: z.string(),
});
export type TextBlock = z.infer<typeof TextBlock>;

export const ToolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string(),
  input: z.unknown(),
});
export type ToolUseBlock = z.infer<typeof ToolUseBlock>;

export const ToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: z.string(),
  is_error: z.boolean().optional(),
});
export type ToolResultBlock = z.infer<typeof ToolResultBlock>;

export const ThinkingBlock = z.looseObject({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string(),
});

export const RedactedThinkingBlock = z.looseObject({
  type: z.literal('redacted_thinking'),
  data: z.string(),
});

/** Any other block the model may return (server tools, search results): stored as received. */
export const OtherBlock = z.looseObject({
  type: z.string().refine((t) => !['text', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'].includes(t), {
    message: 'known block types must match their own schema',
  }),
});

export const ContentBlock = z.union([
  z.discriminatedUnion('type', [TextBlock, ToolUseBlock, ToolResultBlock, ThinkingBlock, RedactedThinkingBlock]),
  OtherBlock,
]);
export type ContentBlock = z.infer<typeof ContentBlock>;

export const Role = z.enum(['user', 'assistant']);
export type Role = z.infer<typeof Role>;

export const Message = z.object({
  role: Role,
  content: z.array(ContentBlock),
});
export type Message = z.infer<typeof Message>;

/** Why the model stopped (the Messages API `stop_reason`); the Choice state switches on it. */
export const StopReason = z.enum([
  'end_turn',
  'tool_use',
  'max_tokens',
  'stop_sequence',
  'pause_turn',
  'refusal',
  'model_context_window_exceeded',
]);
export type StopReason = z.infer<typeof StopReason>;

export const Usage = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadInputTokens: z.number().int().nonnegative(),
  cacheCreationInputTokens: z.number().int().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;

export const zeroUsage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

export function isToolUse(block: ContentBlock): block is ToolUseBlock {
  return block.type === 'tool_use';
}

export function isText(block: ContentBlock): block is TextBlock {
  return block.type === 'text';
}

/** The tool calls of a message, in the order the model made them. */
export function toolUses(message: Pick<Message, 'content'>): ToolUseBlock[] {
  return message.content.filter(isToolUse);
}

/** The message's text blocks joined, the way a person reads the answer. */
export function textOf(message: Pick<Message, 'content'>): string {
  return message.content
    .filter(isText)
    .map((b) => b.text)
    .join('\n');
}

export function textBlock(text: string): TextBlock {
  return { type: 'text', text };
}

export function toolResult(toolUseId: string, content: string, isError = false): ToolResultBlock {
  return isError
    ? { type: 'tool_result', tool_use_id: toolUseId, content, is_error: true }
    : { type: 'tool_result', tool_use_id: toolUseId, content };
}
