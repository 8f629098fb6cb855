/**
 * Live progress of a run for a person at a terminal: phase and agent changes, each tool call
 * as it happens, calls waiting for approval (with the command that decides them), iterations
 * and token usage, then the result and the files written.
 */
import type { RunView } from '../../functions/api/schemas.js';
import type { AgentName } from '../../functions/core/names.js';
import { agentPhases } from '../../functions/core/phases.js';
import type { Phase } from '../../functions/core/runs.js';
import { type StepwiseClient, runPath } from './client.js';

interface MessageItem {
  seq: number;
  agent: AgentName;
  role: string;
  content: { type: string; name?: string; input?: unknown; text?: string; is_error?: boolean; content?: string }[];
}

export interface FollowOptions {
  intervalMs?: number;
  write?: (line: string) => void;
  /** Stop following after this long (ms); the run goes on. */
  timeoutMs?: number;
  /** The command line that runs stepwise for this person, for the hints. @default 'stepwise' */
  command?: string;
}

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

/**
 * Polls the run until it stops and prints what happened, in the order it happened: an agent's
 * phase line before its first message, the final phase after the last message. Returns the
 * final run.
 */
export async function follow(client: StepwiseClient, runId: string, options: FollowOptions = {}): Promise<RunView> {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const interval = options.intervalMs ?? 500;
  const deadline = Date.now() + (options.timeoutMs ?? 24 * 60 * 60 * 1000);
  let lastPhase = '';
  const phaseLine = (phase: Phase, agent?: AgentName) => {
    const line = `phase ${phase}${agent ? ` · ${agent}` : ''}`;
    if (line !== lastPhase) write((lastPhase = line));
  };
  const started = new Set<AgentName>();
  const agentStarts = (agent: AgentName, phase: Phase) => {
    if (started.has(agent)) return;
    started.add(agent);
    phaseLine(phase, agent);
  };
  const seen = new Map<string, number>();
  const announced = new Set<string>();
  let run: RunView;
  for (;;) {
    // The record first, then the messages: the messages hold at least everything that happened
    // before the record's state, so a phase change is never printed ahead of earlier messages.
    run = await client.call<RunView>('GET', runPath(runId));
    for (const item of await newMessages(client, runId, seen)) {
      agentStarts(item.agent, agentPhases[item.agent]);
      if (item.role !== 'assistant') {
        for (const block of item.content) {
          if (block.type === 'tool_result' && block.is_error) write(`  ✗ ${item.agent}: ${String(block.content).split('\n')[0]?.slice(0, 160)}`);
        }
        continue;
      }
      for (const block of item.content) {
        if (block.type === 'tool_use' && block.name) write(`  → ${item.agent}: ${describeToolCall(block.name, block.input)}`);
      }
    }
    // An agent at work that has written nothing yet.
    if (run.status === 'running' && run.currentAgent) agentStarts(run.currentAgent, run.phase);
    for (const waiting of run.waitingFor ?? []) {
      if (announced.has(waiting.toolUseId)) continue;
      announced.add(waiting.toolUseId);
      write(describeWaiting(runId, waiting, options.command));
    }
    if (run.status !== 'running') {
      phaseLine(run.phase, run.currentAgent);
      break;
    }
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
  const iterations = Object.entries(run.iterations).map(([a, n]) => `${a} ${n}`).join(', ');
  write(`${run.status} · iterations: ${iterations || 'none'} · tokens: ${run.usage.inputTokens} in, ${run.usage.outputTokens} out`);
  return run;
}

/** Messages not printed yet, per agent; advances the cursors. */
async function newMessages(client: StepwiseClient, runId: string, seen: Map<string, number>): Promise<MessageItem[]> {
  const fresh: MessageItem[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.call<{ items: MessageItem[]; nextCursor?: string }>(
      'GET',
      runPath(runId, `/messages${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`),
    );
    for (const item of page.items) {
      const key = `${item.agent}#${item.seq}`;
      if (seen.has(key)) continue;
      seen.set(key, item.seq);
      fresh.push(item);
    }
    cursor = page.nextCursor;
  } while (cursor);
  return fresh;
}
