/**
 * Checks a reviewer's edited tool input before it is sent: JSON, an object, and, for the built-in
 * tools, their own zod input schemas (the same ones the tool step validates with). Loaded only when
 * a reviewer edits an input, so the first load of the console does not carry zod.
 */
import { builtinTools } from '../../functions/core/tools/builtin/builtin.js';

export type Checked = { ok: true; value: Record<string, unknown> } | { ok: false; problems: string[] };

/** The edited input of a call to `tool`, parsed and validated. */
export function checkToolInput(tool: string, text: string): Checked {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, problems: [`Not valid JSON: ${error instanceof Error ? error.message : String(error)}`] };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, problems: ['The input must be a JSON object.'] };
  const known = builtinTools.find((t) => t.name === tool);
  if (!known) return { ok: true, value: value as Record<string, unknown> };
  const parsed = known.input.safeParse(value);
  if (parsed.success) return { ok: true, value: value as Record<string, unknown> };
  return { ok: false, problems: parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || 'input'}: ${issue.message}`) };
}
