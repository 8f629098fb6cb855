/**
 * An example Lambda tool: counts the words of `{ text }`. Deployed, any function in any language
 * does: it receives the validated input as its event, and its answer is the tool result.
 */
export async function handler(event: { text: string }): Promise<{ words: number }> {
  return { words: event.text.split(/\s+/).filter(Boolean).length };
}
