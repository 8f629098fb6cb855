/**
 * How the offline model works a goal: a program that yields tool calls and reads their results,
 * as a model told to use its tools would. The program is replayed on every request against the
 * results the run has so far (`offlineTurn`), so it holds no state of its own.
 *
 * It recognises what the built-in tools can do from the goal (arithmetic → calculator calls;
 * write, read, edit or list files → the file tools with the paths and content the goal names),
 * the external tools whose names the goal mentions, and the `final_answer` tool of a run with an
 * output schema; it reacts to what the tools return (a denied write is not reported as saved).
 * Anything else it answers by saying what it is and what it can show.
 */
import { type Expr, findExpression, showExpr, showNumber } from './arithmetic.js';
import { fileIntents } from './files.js';
import type { Observation, OfferedTool, Reading } from './request.js';
import { valueFor } from './schema-value.js';

/** One tool call. */
export interface Call {
  name: string;
  input: Record<string, unknown>;
}

/** One turn that calls a tool, with what the model says before it. */
export interface Act {
  say?: string;
  call: Call;
}

/** A program: yields acts, is sent each act's result, returns the final answer's text. */
export type Program = Generator<Act, string, Observation>;

/** Tools that are not the deployment's own (built-ins and the loop's tools); the rest are external. */
const ownTools = new Set(['calculator', 'read_file', 'write_file', 'list_files', 'edit_file', 'finish_plan', 'final_answer']);

/** The goal without the tags tests and scripts add (`[[tag]]`, `[script:name]`). */
export function goalText(text: string): string {
  return text.replace(/\[\[[^\]]*\]\]|\[script:[^\]]*\]/g, '').replace(/\s+/g, ' ').trim();
}

/** A program's intro: said once, before its first call. */
export class Intro {
  constructor(private text: string | undefined) {}
  act(call: Call): Act {
    const say = this.text;
    this.text = undefined;
    return say ? { say, call } : { call };
  }
}

/** Works out `expr` with calculator calls, one operation a call; a number, or the calculator's refusal. */
export function* evaluate(expr: Expr, intro: Intro): Generator<Act, number | { refused: string }, Observation> {
  if (expr.kind === 'number') return expr.value;
  const a = yield* evaluate(expr.left, intro);
  if (typeof a !== 'number') return a;
  const b = yield* evaluate(expr.right, intro);
  if (typeof b !== 'number') return b;
  const seen = yield intro.act({ name: 'calculator', input: { operation: expr.op, a, b } });
  if (seen.isError) return { refused: seen.result };
  const value = Number(seen.result);
  return Number.isFinite(value) ? value : { refused: `it answered "${seen.result}"` };
}

/** The single agent (and any agent that answers the run): the goal's work with the tools offered, then the answer. */
export function* single(reading: Reading): Program {
  const goal = goalText(reading.opening);
  const { tools } = reading;
  const expr = tools.has('calculator') ? (findExpression(goal) ?? findExpression(withEarlierResult(goal, reading.earlierAnswers))) : undefined;
  const files = fileIntents(goal);
  const external = [...tools.values()].filter((tool) => !ownTools.has(tool.name) && mentions(goal, tool.name));
  const answer = tools.get('final_answer');
  const recognised = expr || files.writes.length || files.reads.length || files.edits.length || files.list || external.length;
  if (!recognised && !answer) return offlineNote(goal);

  const notes: string[] = [];
  const intro = new Intro(introFor(expr, files.writes.map((w) => w.path), external));
  const read: string[] = [];
  if (files.list && tools.has('list_files')) {
    const seen = yield intro.act({ name: 'list_files', input: {} });
    const listed = seen.result.trim().split('\n').filter(Boolean);
    notes.push(seen.isError ? `Listing the files failed: ${seen.result}` : listed.length ? `The workspace holds ${listed.join(', ')}.` : 'The workspace is empty.');
  }
  for (const path of files.reads) {
    const seen = yield intro.act({ name: 'read_file', input: { path } });
    if (seen.isError) {
      notes.push(`I could not read ${path}: ${seen.result}`);
      continue;
    }
    read.push(`${path}: ${excerpt(seen.result)}`);
    notes.push(`${path} says: ${excerpt(seen.result)}`);
  }
  let value: number | undefined;
  if (expr) {
    const outcome = yield* evaluate(expr, intro);
    if (typeof outcome === 'number') {
      value = outcome;
      notes.push(`${showExpr(expr)} = ${showNumber(outcome)}.`);
    } else notes.push(`I could not work out ${showExpr(expr)}: the calculator refused (${outcome.refused}).`);
  }
  for (const tool of external) {
    const seen = yield intro.act({ name: tool.name, input: inputFor(tool, goal) });
    notes.push(seen.isError ? `${tool.name} failed: ${excerpt(seen.result)}` : `${tool.name} answered: ${excerpt(seen.result)}`);
  }
  for (const write of files.writes) {
    const content = write.content ?? (expr && value !== undefined ? `# Answer\n\n${showExpr(expr)} = ${value}\n` : derivedContent(write.path, goal, goal, read));
    const seen = yield intro.act({ name: 'write_file', input: { path: write.path, content } });
    notes.push(seen.isError ? notWritten(write.path, seen.result, value !== undefined) : value !== undefined ? `I saved it to ${write.path}.` : `I wrote ${write.path}.`);
  }
  for (const edit of files.edits) {
    const seen = yield intro.act({ name: 'edit_file', input: { path: edit.path, old_string: edit.oldString, new_string: edit.newString } });
    notes.push(seen.isError ? `I could not edit ${edit.path}: ${seen.result}` : `In ${edit.path}, "${edit.oldString}" is now "${edit.newString}".`);
  }
  if (!answer) return notes.join(' ');
  return yield* finalAnswer(answer, goal, notes.join(' '), value);
}

/**
 * The run's answer through `final_answer` (structured output): a value of its schema carrying the
 * computed number and the summary, said alongside; once more with the plainest value the schema
 * takes if that is refused, then why there is no answer.
 */
export function* finalAnswer(tool: OfferedTool, goal: string, said: string, value?: number): Program {
  const summary = said || `This is the offline stand-in model's answer to: ${goal}`;
  const hints = { ...(value !== undefined ? { number: value } : {}), text: summary };
  const accepted = yield { say: summary, call: { name: tool.name, input: inputFor(tool, goal, hints) } };
  if (!accepted.isError) return summary;
  const plain = yield { call: { name: tool.name, input: asInput(valueFor(tool.inputSchema)) } };
  return plain.isError ? `${summary} I could not give an answer that matches the output schema: ${plain.result}` : summary;
}

/** What an unrecognised goal gets: what this model is, and what it can show. */
export function offlineNote(goal: string): string {
  return (
    `I'm the offline stand-in model Stepwise uses on this machine when no ANTHROPIC_API_KEY is set, so I can't really answer "${excerpt(goal, 120)}". ` +
    'Offline I can show how Stepwise works: arithmetic with the calculator ("What is 12 times 34?"), files ' +
    '("Write hello.txt containing Hello", "List the files"), structured output (a run with an output schema), ' +
    'approvals, multi-agent runs, sessions and forks. Set ANTHROPIC_API_KEY to talk to Claude.'
  );
}

/** The content of a file the goal names but gives no content for: a stub that says where it came from. */
export function derivedContent(path: string, description: string, goal: string, read: readonly string[] = []): string {
  const name = (path.split('/').at(-1) ?? path).replace(/\.[^.]*$/, '');
  const identifier = name.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase()).replace(/^\d+/, '') || 'main';
  const origin = `Written by Stepwise's offline stand-in model for the goal: ${goal}`;
  const extension = path.split('.').at(-1)?.toLowerCase();
  switch (extension) {
    case 'ts':
      return `// ${description}\n// ${origin}\nexport function ${identifier}(): string {\n  return '${name}';\n}\n`;
    case 'js':
    case 'mjs':
      return `// ${description}\n// ${origin}\nexport function ${identifier}() {\n  return '${name}';\n}\n`;
    case 'py':
      return `# ${description}\n# ${origin}\ndef ${name.replace(/\W+/g, '_')}():\n    return "${name}"\n`;
    case 'json':
      return `${JSON.stringify({ description, goal }, null, 2)}\n`;
    case 'md':
      return `# ${name}\n\n${description}\n\n${read.map((line) => `- ${line}\n`).join('')}${read.length ? '\n' : ''}_${origin}_\n`;
    default:
      return `${description}\n\n${origin}\n`;
  }
}

/** The input of a tool: a value of its schema, with the goal's quoted text (or the goal) in its text fields. */
export function inputFor(tool: OfferedTool, goal: string, hints: { number?: number; text?: string } = {}): Record<string, unknown> {
  const quoted = /"([^"]+)"|“([^”]+)”/.exec(goal);
  return asInput(valueFor(tool.inputSchema, { text: quoted?.[1] ?? quoted?.[2] ?? goal, ...hints }));
}

function asInput(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Whether a goal names a tool: a word of its name (`docs__search` → docs, search) in the goal. */
function mentions(goal: string, name: string): boolean {
  const words = goal.toLowerCase().match(/[a-z]+/g) ?? [];
  const parts = name.toLowerCase().split(/_+|-/).filter((part) => part.length >= 3 && part !== 'agent');
  return parts.some((part) => words.some((word) => word === part || (word.startsWith(part) && word.length - part.length <= 2)));
}

/** A follow-up goal with "it" or "that" standing for the last number of the conversation's earlier answers. */
function withEarlierResult(goal: string, earlier: readonly string[]): string {
  const last = earlier.at(-1)?.match(/-?\d[\d,]*(?:\.\d+)?/g)?.at(-1)?.replaceAll(',', '');
  return last ? goal.replace(/\b(?:it|that|the result|the answer)\b/gi, last) : goal;
}

function introFor(expr: Expr | undefined, writes: string[], external: OfferedTool[]): string | undefined {
  const parts = [
    ...(expr ? [`work out ${showExpr(expr)} with the calculator`] : []),
    ...external.map((tool) => `ask ${tool.name}`),
    ...(writes.length ? [`${expr ? 'save it to' : 'write'} ${writes.join(' and ')}`] : []),
  ];
  return parts.length ? `I'll ${parts.join(', then ')}.` : undefined;
}

/** What the answer says about a write that did not happen. */
function notWritten(path: string, result: string, answer: boolean): string {
  const denied = /^A reviewer denied this tool call(?::\s*(.*))?/.exec(result);
  const what = answer ? `save it to ${path}` : `write ${path}`;
  if (denied) return `I did not ${what}: a reviewer denied the write${denied[1] ? ` (${denied[1].replace(/\.$/, '')})` : ''}.`;
  return `I could not ${what}: ${result}`;
}

/** Text cut to a length, on one line. */
export function excerpt(text: string, length = 200): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > length ? `${line.slice(0, length - 1)}…` : line;
}
