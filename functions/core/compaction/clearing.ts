/**
 * Context editing: old tool results cleared from what the model is sent, never from memory.
 *
 * The rule Anthropic's `clear_tool_uses_20250919` edit documents, as a pure function over the
 * Messages API's messages: once the prompt is over `triggerTokens`, the oldest tool results are
 * replaced with a short placeholder, never those of the newest `keepToolUses` calls nor of the
 * `excludeTools`. Clearing goes in batches of at least `clearAtLeastTokens`, from the oldest, and
 * a batch that cannot reach that size is not applied. The batches' edges depend only on the old
 * results, so the prompt sent stays byte-identical from one request to the next until the next
 * batch is needed, and the cached prefix keeps hitting in between (invariant 4). A result is
 * replaced in place: its `tool_use` keeps its `tool_result` (invariant 6).
 *
 * The local Messages API stand-in and the scripted model apply it as the API does; the
 * providers that speak the Messages API send the settings as `context_management`.
 */
import type { ContextEditing } from './types.js';

/** What a cleared result reads. */
export const clearedPlaceholder = '[This tool result was cleared from the context to save space.]';

/** A message as the Messages API takes it: content blocks, or a string. */
export interface WireMessage {
  role: string;
  content: unknown;
}

/** What one clearing did, as the API's `applied_edits` reports it. */
export interface AppliedClearing {
  clearedToolUses: number;
  clearedInputTokens: number;
}

/** The request's messages after clearing, and what was cleared (nothing: the same array back). */
export interface Cleared<M extends WireMessage> {
  messages: M[];
  applied?: AppliedClearing;
}

/** A rough token count (four characters a token), as the stand-ins count. */
function tokensOf(value: unknown): number {
  return Math.ceil(JSON.stringify(value).length / 4);
}

interface Candidate {
  id: string;
  /** Tokens saved by replacing the result with the placeholder. */
  saves: number;
}

function blocks(content: unknown): Record<string, unknown>[] {
  return Array.isArray(content) ? content.filter((b): b is Record<string, unknown> => typeof b === 'object' && b !== null) : [];
}

/**
 * Clears old tool results from `messages` by `edit`, `promptTokens` being the whole prompt's size
 * (system prompt and tools included), as counted before clearing.
 */
export function clearToolResults<M extends WireMessage>(messages: M[], edit: ContextEditing, promptTokens: number): Cleared<M> {
  if (promptTokens <= edit.triggerTokens) return { messages };
  const calls: { id: string; name: string }[] = [];
  const results = new Map<string, Record<string, unknown>>();
  for (const message of messages) {
    for (const block of blocks(message.content)) {
      if (message.role === 'assistant' && block.type === 'tool_use' && typeof block.id === 'string') calls.push({ id: block.id, name: String(block.name) });
      if (message.role === 'user' && block.type === 'tool_result' && typeof block.tool_use_id === 'string') results.set(block.tool_use_id, block);
    }
  }
  const excluded = new Set(edit.excludeTools ?? []);
  const candidates: Candidate[] = calls
    .slice(0, Math.max(0, calls.length - edit.keepToolUses))
    .flatMap(({ id, name }) => {
      const result = results.get(id);
      if (!result || excluded.has(name)) return [];
      const saves = tokensOf(result) - tokensOf({ ...result, content: clearedPlaceholder });
      return saves > 0 ? [{ id, saves }] : [];
    });
  // Whole batches from the oldest, until the prompt is back under the trigger.
  const minimum = edit.clearAtLeastTokens ?? 1;
  const cleared = new Set<string>();
  let clearedTokens = 0;
  let next = 0;
  while (promptTokens - clearedTokens > edit.triggerTokens) {
    let batch = 0;
    let end = next;
    while (end < candidates.length && batch < minimum) batch += candidates[end++]?.saves ?? 0;
    if (batch < minimum) break;
    for (const candidate of candidates.slice(next, end)) cleared.add(candidate.id);
    clearedTokens += batch;
    next = end;
  }
  if (cleared.size === 0) return { messages };
  const edited = messages.map((message) => {
    if (message.role !== 'user' || !Array.isArray(message.content)) return message;
    const content: unknown[] = message.content;
    if (!content.some((b) => isClearedResult(b, cleared))) return message;
    return { ...message, content: content.map((b) => (isClearedResult(b, cleared) ? { ...b, content: clearedPlaceholder } : b)) };
  });
  return { messages: edited, applied: { clearedToolUses: cleared.size, clearedInputTokens: clearedTokens } };
}

function isClearedResult(block: unknown, cleared: ReadonlySet<string>): block is Record<string, unknown> {
  return typeof block === 'object' && block !== null && (block as Record<string, unknown>).type === 'tool_result' && cleared.has(String((block as Record<string, unknown>).tool_use_id));
}
