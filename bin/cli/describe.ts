/**
 * How the CLI names things for a person at a terminal: a tool call in a few words, a call
 * waiting for approval with the command that decides it, a word quoted for the shell.
 */
import type { RunView } from '../../functions/api/schemas.js';

/** One tool call as a short line: `write_file src/app.ts`. */
export function describeToolCall(name: string, input: unknown): string {
  const fields = (input ?? {}) as Record<string, unknown>;
  const key = ['path', 'operation'].find((k) => typeof fields[k] === 'string');
  if (name === 'calculator') return `calculator ${fields.a} ${fields.operation} ${fields.b}`;
  if (name === 'finish_plan') return `finish_plan (${Array.isArray(fields.steps) ? fields.steps.length : 0} steps)`;
  return key ? `${name} ${String(fields[key])}` : name;
}

/** A call waiting for a reviewer, with the command that approves it, written after `command`. */
export function describeWaiting(runId: string, waiting: RunView['waitingFor'][number], command = 'stepwise'): string {
  const ids = `${shellWord(runId)} ${shellWord(waiting.toolUseId)}`;
  return `  ⏸ ${describeToolCall(waiting.name, waiting.input)} awaits approval: ${command} approve ${ids} (or deny, with --reason "…")`;
}

/** A word as a POSIX shell reads it back: as it is when that is safe, else single-quoted. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
