/**
 * A run's timeline (docs/console.md, "The timeline"): a waterfall of its agents, their model calls
 * and their tool calls, from what the transcript's pages carry (each answer's model call: when it
 * began, how long it took, its tokens). Pure: no DOM, no fetch.
 *
 * A tool call is shown from the answer that made it to the agent's next model call: the state
 * machine runs a turn's calls between the two (at once, in parallel), so that is the time they
 * took, transitions included; a turn's calls share one span of time.
 */

/** A transcript item as `GET /runs/{runId}/messages` returns it, as far as the timeline reads it. */
export interface TimelineMessage {
  seq: number;
  agent: string;
  role: 'user' | 'assistant';
  content: readonly { type: string; name?: string; id?: string }[];
  call?: { startedAt: string; ms: number; model?: string; usage?: { inputTokens: number; outputTokens: number } };
}

/** One bar of the waterfall; times in milliseconds from the run's first model call. */
export interface TimelineRow {
  kind: 'agent' | 'chat' | 'tool';
  /** A stable key for the view. */
  key: string;
  label: string;
  agent: string;
  start: number;
  duration: number;
  /** The tokens of a model call, or of all an agent's calls. */
  tokens?: { input: number; output: number };
}

export interface Timeline {
  rows: TimelineRow[];
  /** From the first model call's start to the last bar's end, in milliseconds. */
  total: number;
}

/** The waterfall of a run's transcript: each agent in the order it worked, then its calls in order. */
export function timelineOf(messages: readonly TimelineMessage[]): Timeline {
  const answers = messages.filter((m): m is TimelineMessage & { call: NonNullable<TimelineMessage['call']> } => m.role === 'assistant' && m.call !== undefined);
  const first = answers[0];
  if (!first) return { rows: [], total: 0 };
  const origin = Math.min(...answers.map((m) => Date.parse(m.call.startedAt)));
  const agents = [...new Set(answers.map((m) => m.agent))];
  const rows: TimelineRow[] = [];
  for (const agent of agents) {
    const own = answers.filter((m) => m.agent === agent).sort((a, b) => a.seq - b.seq);
    const calls: TimelineRow[] = [];
    let input = 0;
    let output = 0;
    own.forEach((message, index) => {
      const start = Date.parse(message.call.startedAt) - origin;
      const end = start + message.call.ms;
      const usage = message.call.usage;
      if (usage) {
        input += usage.inputTokens;
        output += usage.outputTokens;
      }
      calls.push({
        kind: 'chat',
        key: `${agent}-chat-${message.seq}`,
        label: message.call.model ?? 'model call',
        agent,
        start,
        duration: message.call.ms,
        ...(usage ? { tokens: { input: usage.inputTokens, output: usage.outputTokens } } : {}),
      });
      const next = own[index + 1];
      // The calls of the turn ran until the next model call; the last turn's calls, until they were answered (unknown): shown as instants.
      const until = next ? Date.parse(next.call.startedAt) - origin : end;
      for (const block of message.content) {
        if (block.type !== 'tool_use') continue;
        calls.push({ kind: 'tool', key: `${agent}-tool-${block.id ?? message.seq}`, label: block.name ?? 'tool', agent, start: end, duration: Math.max(0, until - end) });
      }
    });
    const start = Math.min(...calls.map((row) => row.start));
    const end = Math.max(...calls.map((row) => row.start + row.duration));
    rows.push({ kind: 'agent', key: `${agent}-agent`, label: agent, agent, start, duration: end - start, tokens: { input, output } }, ...calls);
  }
  return { rows, total: Math.max(...rows.map((row) => row.start + row.duration)) };
}

/** A duration as people read it: `850 ms`, `2.4 s`, `3 min 5 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1_000)} s`;
}
