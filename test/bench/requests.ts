/**
 * Every DynamoDB and S3 request of the bench's agent-loop run, justified: each kind of
 * request (function, operation, item family; requests to the other local endpoints too) has a
 * reason here, written from the code that makes it. A kind without one prints UNEXPLAINED, so a new request is noticed; a reason no request
 * matches any more is listed too, so a removed request takes its reason with it.
 */
import { type RequestKind, orchestrator } from './iteration.js';
import { row } from './table.js';

/** Why each kind of request is made: `<function> <operation> <item family>`, as the table prints them. */
export const why: Record<string, string> = {
  // The inference step (functions/core/steps/inference.ts, functions/adapters/dynamo/conversations.ts).
  'inference Query conv# sk BETWEEN m#<n># AND m#~':
    "loads what is new of the conversation: a warm container keeps what it read and what it wrote, and asks only for what follows the last message it knows (that message's tool results, written since by the tool steps), so one small request however long the history",
  'inference Query conv# sk BETWEEN m# AND m#~':
    "the same load with nothing kept yet (an agent's first step in a container): the conversation from its start",
  'inference PutItem conv# m#<n>':
    "two a step, each message its own item written only if absent (invariants 2, 3): the user message that carries the last turn's tool results (by reference, they stay in their items) and the model's answer",
  'inference UpdateItem run# run':
    "recordStep: adds the step's tokens and cost to the run record once (the condition is the agent's counted mark, one number that only grows), sets iterations and updatedAt; usage, cost and budgets read it",
  'inference GetItem run# run':
    "one a step, for its status: a cancelled run calls the model no more even when stopping its execution failed (the controls of a run without a budget are kept by a warm container, its status is not); an agent's first step reads a second time, its gated tools (approvals.toolsFor, projected, kept per run)",
  // The tool step (functions/core/steps/tool.ts).
  'tool Query conv# sk BETWEEN m#<n> AND m#<n>#r#~':
    'loadTurn: the assistant message holding the call and any results already stored, in one request; a stored result is returned without running the tool again (invariant 3)',
  'tool PutItem conv# m#<n>#r#<n>':
    "the call's tool_result, its own item written only if absent; a retry that lost the race returns the stored one (invariant 3)",
  'tool GetItem run# run':
    "a run's first tool step in a container: the run record, for the definitions its agents follow (kept per run, since they never change), so the step runs only the agent's own tools",
  'tool GetObject workspaces/': "the read_file call the model made: the file from the run's workspace (the bench's script reads one each turn)",
  'tool PutObject workspaces/': "the write_file call the model made (the script's first turn)",
  // The API function (functions/core/intake/create.ts, functions/api/app.ts).
  'api GetItem run# run':
    'GET /runs/{runId}: the bench reads the outcome (POST /runs looks for an existing run only under an id the caller or an earlier request named, not under one it has just generated)',
  'api PutItem run# run': 'POST /runs: creates the run record, only if absent',
  'api StartExecution /': 'POST /runs: starts the orchestrator (the local Step Functions API), its execution named after the runId',
  // The orchestrator's DynamoDB service integrations (lib/orchestrator.ts).
  [`${orchestrator} UpdateItem run# run`]: 'MarkSingle sets the phase and agent before the loop runs (only while the run is running), MarkComplete its end',
  [`${orchestrator} GetItem run# run`]: "LoadSingleUsage: the run's token usage for the completion event (projected)",
};


/** The table of the run's requests by kind, with their reasons. */
export function requestsReport(kinds: RequestKind[], iterations: number): string {
  const lines = [
    row(['function', 'request', 'item family', 'in the run', 'per iteration', 'ms each', 'bytes sent / received each', 'why']),
    row(['---', '---', '---', '---', '---', '---', '---', '---']),
  ];
  const seen = new Set<string>();
  for (const kind of kinds) {
    const key = kindKey(kind);
    seen.add(key);
    lines.push(
      row([
        kind.fn,
        `${kind.service} ${kind.operation}`,
        `\`${kind.family}\``,
        kind.count,
        (kind.count / Math.max(1, iterations)).toFixed(2),
        kind.ms.toFixed(2),
        `${Math.round(kind.sent)} / ${Math.round(kind.received)}`,
        why[key] ?? '**UNEXPLAINED**',
      ]),
    );
  }
  const stale = Object.keys(why).filter((key) => !seen.has(key));
  if (stale.length) lines.push('', `Reasons no request of this run matched: ${stale.map((key) => `\`${key}\``).join(', ')}.`);
  return lines.join('\n');
}

const kindKey = ({ fn, operation, family }: RequestKind) => `${fn} ${operation} ${family}`;
