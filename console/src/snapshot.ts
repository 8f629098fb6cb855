/**
 * A run read from the REST routes (`GET /runs/{runId}` and its `/messages`), written as the events
 * its live stream would carry for it (docs/ARCHITECTURE.md, "The live stream"): the console's view
 * when the stream route cannot be reached, folded by the same code as the stream. The order and the
 * ids follow the stream's contract: `<runId>:<agent>:<seq>:<block>` for a text block, the tool
 * call's id for a call, `<runId>:<agent>:<seq>.r<index>` for a result. Pure.
 */
import type { StreamEvent, Usage } from './transcript.js';

/** A run as `GET /runs/{runId}` answers (the fields the console reads). */
export interface RunRecord {
  runId: string;
  mode: string;
  goal: string;
  sessionId?: string;
  status: string;
  phase: string;
  currentAgent?: string;
  plan?: unknown;
  result?: { response: string; actionsTaken: string[] };
  error?: { code: string; message: string; agent?: string };
  usage: Usage;
  estimatedCostUsd?: number;
  createdAt: string;
  updatedAt: string;
  waitingFor?: { toolUseId: string; name: string; input: unknown; inputTruncated?: boolean }[];
  decisions?: { toolUseId: string; name: string; decision: 'approve' | 'deny'; reason?: string; decidedBy: string }[];
}

/** One message as `GET /runs/{runId}/messages` lists it. */
export interface MessageRecord {
  seq: number;
  agent: string;
  role: string;
  content: ContentBlock[];
}

type ContentBlock = { type: string; [field: string]: unknown };

const agentPhase: Record<string, string> = { single: 'executing', architect: 'planning', coder: 'executing' };

/** The stream's events for a run and its messages, as far as they are stored. */
export function snapshotEvents(run: RunRecord, messages: readonly MessageRecord[]): StreamEvent[] {
  const events: StreamEvent[] = [];
  const custom = (name: string, value: Record<string, unknown>) => events.push({ type: 'CUSTOM', name, value });
  const threadId = run.sessionId ?? run.runId;
  events.push({ type: 'RUN_STARTED', threadId, runId: run.runId });
  custom('stepwise.run', {
    runId: run.runId,
    mode: run.mode,
    goal: run.goal,
    ...(run.sessionId ? { sessionId: run.sessionId } : {}),
    createdAt: run.createdAt,
  });
  const ended = run.status !== 'running';
  const waiting = new Map((run.waitingFor ?? []).map((w) => [w.toolUseId, w]));
  const decided = new Map((run.decisions ?? []).map((d) => [d.toolUseId, d]));
  const agents = run.mode === 'single' ? ['single'] : ['architect', 'coder'];
  const present = agents.filter((agent) => agent === agents[0] || agent === run.currentAgent || messages.some((m) => m.agent === agent));

  for (const [position, agent] of present.entries()) {
    events.push({ type: 'STEP_STARTED', stepName: agent });
    if (run.mode === 'multi') custom('stepwise.phase', { phase: agentPhase[agent] ?? 'executing', agent });
    const own = messages.filter((m) => m.agent === agent).sort((a, b) => a.seq - b.seq);
    for (const [i, message] of own.entries()) {
      if (message.role !== 'assistant') continue;
      const parent = `${run.runId}:${agent}:${message.seq}`;
      for (const [block, content] of message.content.entries()) {
        if (content.type === 'text' && typeof content.text === 'string' && content.text) {
          const messageId = `${parent}:${block}`;
          events.push({ type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' });
          events.push({ type: 'TEXT_MESSAGE_CONTENT', messageId, delta: content.text });
          events.push({ type: 'TEXT_MESSAGE_END', messageId });
        }
      }
      const calls = message.content.filter((c) => c.type === 'tool_use' && typeof c.id === 'string');
      for (const call of calls) {
        const toolCallId = String(call.id);
        events.push({ type: 'TOOL_CALL_START', toolCallId, toolCallName: String(call.name), parentMessageId: parent });
        events.push({ type: 'TOOL_CALL_ARGS', toolCallId, delta: JSON.stringify(call.input ?? {}) });
        events.push({ type: 'TOOL_CALL_END', toolCallId });
      }
      // The results are in the next message of the conversation, a user message.
      const answers = own[i + 1]?.role === 'user' ? own[i + 1]?.content ?? [] : [];
      const resultOf = (id: string) => answers.find((c) => c.type === 'tool_result' && c.tool_use_id === id);
      for (const call of calls) {
        const toolCallId = String(call.id);
        const asked = waiting.get(toolCallId) ?? decided.get(toolCallId);
        if (asked) custom('stepwise.approval_requested', { toolCallId, tool: String(call.name), input: call.input ?? {}, agent });
      }
      for (const [index, call] of calls.entries()) {
        const toolCallId = String(call.id);
        const decision = decided.get(toolCallId);
        if (decision) {
          custom('stepwise.approval_decided', {
            toolCallId,
            decision: decision.decision,
            decidedBy: decision.decidedBy,
            ...(decision.reason ? { reason: decision.reason } : {}),
          });
        }
        const result = resultOf(toolCallId);
        if (!result) continue;
        events.push({ type: 'TOOL_CALL_RESULT', messageId: `${parent}.r${index}`, toolCallId, content: textOf(result.content), role: 'tool' });
        custom('stepwise.tool_result', { toolCallId, isError: result.is_error === true, ran: decision?.decision !== 'deny' });
      }
    }
    if (agent === 'architect' && run.plan !== undefined) custom('stepwise.plan', { plan: run.plan });
    const later = position < present.length - 1;
    if (later || ended) events.push({ type: 'STEP_FINISHED', stepName: agent });
  }

  if (ended) {
    custom('stepwise.run_ended', {
      status: run.status,
      phase: run.phase,
      ...(run.error ? { error: run.error } : {}),
      usage: run.usage,
      estimatedCostUsd: run.estimatedCostUsd ?? 0,
      ...(run.result ? { result: run.result } : {}),
    });
    if (run.status === 'succeeded') events.push({ type: 'RUN_FINISHED', threadId, runId: run.runId, result: run.result ?? null });
    else if (run.status === 'cancelled') events.push({ type: 'RUN_FINISHED', threadId, runId: run.runId, outcome: { type: 'cancelled' } });
    else events.push({ type: 'RUN_ERROR', message: run.error?.message ?? `The run ${run.status}.`, code: run.error?.code ?? 'RunFailed' });
  }
  return events;
}

/** A tool result's content as text (a string, or text blocks). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((c) => (typeof c === 'object' && c !== null && typeof (c as { text?: unknown }).text === 'string' ? (c as { text: string }).text : '')).join('');
  }
  return '';
}
