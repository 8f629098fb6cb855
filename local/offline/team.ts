/**
 * The offline model as the two agents of a multi-agent run: as the Architect it looks at the
 * workspace and plans one step per file the goal names (or implies: "a module in TypeScript with
 * a README" → `src/<name>.ts`, `README.md`) and per calculation; as the Coder it reads the plan
 * from its first message and carries out each step with the file tools and the calculator.
 */
import { findExpression, showExpr, showNumber } from './arithmetic.js';
import { fileIntents } from './files.js';
import { type Program, Intro, derivedContent, evaluate, excerpt, finalAnswer, goalText } from './agent.js';
import type { Reading } from './request.js';

interface PlanStep {
  description: string;
  action: string;
  parameters?: Record<string, unknown>;
}

/** The Architect: a look at the workspace, then a plan through `finish_plan`. */
export function* architect(reading: Reading): Program {
  const goal = goalText(reading.opening);
  const listed = yield { say: "I'll look at the workspace before I plan.", call: { name: 'list_files', input: {} } };
  const existing = listed.isError ? [] : listed.result.split('\n').map((line) => line.trim()).filter(Boolean);
  const steps = planSteps(goal, existing);
  const say = `${existing.length ? `The workspace holds ${existing.join(', ')}.` : 'The workspace is empty.'} My plan has ${steps.length} step${steps.length === 1 ? '' : 's'}.`;
  const accepted = yield { say, call: { name: 'finish_plan', input: { goal, steps } } };
  return accepted.isError ? `The plan was refused: ${accepted.result}` : 'The plan is handed to the Coder.';
}

/** The steps for a goal: its files (named or implied) and its calculation, in order. */
export function planSteps(goal: string, existing: readonly string[] = []): PlanStep[] {
  const files = fileIntents(goal);
  const steps: PlanStep[] = [];
  for (const path of files.reads) steps.push({ description: `Read ${path}`, action: 'read_file', parameters: { path } });
  const expr = findExpression(goal);
  if (expr) steps.push({ description: `Work out ${showExpr(expr)} with the calculator`, action: 'calculate', parameters: { expression: showExpr(expr) } });
  for (const edit of files.edits) {
    steps.push({ description: `In ${edit.path}, replace "${edit.oldString}" with "${edit.newString}"`, action: 'edit_file', parameters: { path: edit.path, old_string: edit.oldString, new_string: edit.newString } });
  }
  const writes: { path: string; content?: string }[] = files.writes.length ? files.writes : impliedFiles(goal).map((path) => ({ path }));
  for (const { path, content } of writes) {
    const verb = existing.includes(path) ? 'Rewrite' : 'Create';
    steps.push({ description: `${verb} ${path} for the goal`, action: 'create_file', parameters: { path, ...(content !== undefined ? { content } : {}) } });
  }
  if (!steps.length) steps.push({ description: 'Write down the goal and what an offline run can do', action: 'create_file', parameters: { path: 'notes.md' } });
  return steps;
}

const languages: [RegExp, (name: string) => string][] = [
  [/\btypescript\b|\bts\b/i, (name) => `src/${name}.ts`],
  [/\bjavascript\b|\bnode\.?js\b/i, (name) => `src/${name}.js`],
  [/\bpython\b/i, (name) => `${name.replaceAll('-', '_')}.py`],
];

/** Files a goal implies without naming them: a module in a language, a README. */
function impliedFiles(goal: string): string[] {
  const paths: string[] = [];
  const named = /\b([a-z][\w-]*)\s+(?:module|function|class|script|library|package|program|cli|component|service)\b/i.exec(goal);
  const name = named?.[1] && !/^(?:a|an|the|tiny|small|simple|little|new)$/i.test(named[1]) ? named[1].toLowerCase() : 'main';
  const language = languages.find(([pattern]) => pattern.test(goal));
  if (language) paths.push(language[1](name));
  if (/\breadme\b/i.test(goal)) paths.push('README.md');
  return paths;
}

/** The Coder: the plan in its first message, carried out step by step. */
export function* coder(reading: Reading): Program {
  const goal = goalText(/The user's goal:\n([\s\S]*?)\n\nThe Architect's plan:/.exec(reading.opening)?.[1] ?? reading.opening);
  const steps = readPlan(reading.opening);
  const intro = new Intro(`I'll carry out the plan's ${steps.length} step${steps.length === 1 ? '' : 's'}.`);
  const done = { created: [] as string[], edited: [] as string[] };
  const notes: string[] = [];
  let computed: number | undefined;
  for (const [index, step] of steps.entries()) {
    const path = typeof step.parameters?.path === 'string' ? step.parameters.path : undefined;
    const action = `${step.action} ${step.description}`.toLowerCase();
    if (/calc|comput|arithmetic/.test(action)) {
      const expr = findExpression(String(step.parameters?.expression ?? step.description));
      if (!expr) continue;
      const outcome = yield* evaluate(expr, intro);
      if (typeof outcome === 'number') computed = outcome;
      notes.push(typeof outcome === 'number' ? `${showExpr(expr)} = ${showNumber(outcome)}.` : `The calculator refused ${showExpr(expr)}: ${outcome.refused}.`);
    } else if (path && /edit|replace|change/.test(action) && typeof step.parameters?.old_string === 'string' && typeof step.parameters.new_string === 'string') {
      const seen = yield intro.act({ name: 'edit_file', input: { path, old_string: step.parameters.old_string, new_string: step.parameters.new_string } });
      if (seen.isError) notes.push(`I could not edit ${path}: ${excerpt(seen.result)}`);
      else done.edited.push(path);
    } else if (path && /creat|writ|add|rewrit/.test(action)) {
      const content = typeof step.parameters?.content === 'string' ? step.parameters.content : derivedContent(path, step.description, goal);
      const seen = yield intro.act({ name: 'write_file', input: { path, content } });
      if (seen.isError) notes.push(`I could not write ${path}: ${excerpt(seen.result)}`);
      else done.created.push(path);
    } else if (path && /read|verif|check/.test(action)) {
      const seen = yield intro.act({ name: 'read_file', input: { path } });
      notes.push(seen.isError ? `I could not read ${path}: ${excerpt(seen.result)}` : `${path} says: ${excerpt(seen.result)}`);
    } else {
      notes.push(`Step ${index + 1} (${step.description}) needs a real model; I left it out.`);
    }
  }
  const changed = [...(done.created.length ? [`created ${listed(done.created)}`] : []), ...(done.edited.length ? [`edited ${listed(done.edited)}`] : [])];
  const summary = [changed.length ? `I ${changed.join(' and ')}.` : 'I changed no file.', ...notes].join(' ');
  const answer = reading.tools.get('final_answer');
  return answer ? yield* finalAnswer(answer, goal, summary, computed) : summary;
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(', ')} and ${items.at(-1)}` : (items[0] ?? '');
}

/** The steps of a plan as `renderPlan` writes it for the Coder. */
export function readPlan(opening: string): PlanStep[] {
  const steps: PlanStep[] = [];
  for (const line of opening.split('\n')) {
    const step = /^\d+\. \[([^\]]+)\] (.*)$/.exec(line);
    if (step?.[1] && step[2] !== undefined) {
      steps.push({ action: step[1], description: step[2] });
      continue;
    }
    const parameters = /^\s+parameters: (\{.*\})\s*$/.exec(line)?.[1];
    const last = steps.at(-1);
    if (parameters && last) {
      try {
        last.parameters = JSON.parse(parameters) as Record<string, unknown>;
      } catch {
        // A plan's parameters are JSON as renderPlan writes them; other text stays a description.
      }
    }
  }
  return steps;
}
