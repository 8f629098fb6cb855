/**
 * A run as the console shows it, folded from the run's AG-UI events (docs/events.md, "The event
 * stream"; docs/console.md, "How it is built"): its agents in order, each with its text and tool
 * calls as they happen, approvals, results, usage, the plan, and how the run ended. Pure: no DOM,
 * no fetch; the same fold serves the live stream and its pages (`follow.ts`).
 *
 * Each state is a new object; what did not change is shared, so the view redraws only what an
 * event touched. Items are only ever appended, so their positions are stable and kept in an index.
 * Applying an event twice changes nothing: events are remembered by id, and a message or tool
 * call that already exists is never started again, so nothing is shown twice.
 */

/** One event of the stream: the AG-UI `type` and the fields the console reads. */
export interface StreamEvent {
  type: string;
  [field: string]: unknown;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}

export const zeroUsage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

export interface TextItem {
  kind: 'text';
  id: string;
  text: string;
  /** Still being written (no TEXT_MESSAGE_END yet). */
  open: boolean;
  /** A model call whose answer was not kept (the step was retried). */
  abandoned: boolean;
}

export interface Approval {
  /** The input as the reviewer was asked about it. */
  input?: unknown;
  decision?: 'approve' | 'deny';
  decidedBy?: string;
  reason?: string;
  message?: string;
  /** The input the reviewer approved instead of the model's. */
  edited?: unknown;
  /** Why the call waits when no gate names its tool: `egress-after-untrusted`. */
  gate?: string;
}

export interface ToolItem {
  kind: 'tool';
  id: string;
  name: string;
  /** The call's input as JSON text, as it streamed. */
  args: string;
  argsDone: boolean;
  parentMessageId?: string;
  approval?: Approval;
  result?: { content: string; isError?: boolean; ran?: boolean };
  /** The child run a call of an agent started, and whether it has ended. */
  child?: { runId: string; agent: string; ended: boolean; isError?: boolean };
  abandoned: boolean;
}

export interface UsageItem {
  kind: 'usage';
  id: string;
  seq?: number;
  usage: Usage;
  costUsd?: number;
}

export type Item = TextItem | ToolItem | UsageItem;

export interface Section {
  agent: string;
  phase?: string;
  items: Item[];
  finished: boolean;
}

/** A definition a run follows: its name and version (a content hash). */
export interface DefinitionRef {
  name: string;
  version: string;
}

export interface RunInfo {
  runId: string;
  mode?: string;
  goal?: string;
  sessionId?: string;
  createdAt?: string;
  /** The agent the run follows (`assistant` for mode single); absent on runs made before agents were data. */
  agent?: DefinitionRef;
  /** The workflow the run follows (`plan-and-build` for mode multi). */
  workflow?: DefinitionRef;
}

export interface Ending {
  status: string;
  phase?: string;
  error?: { code: string; message: string; agent?: string };
  usage?: Usage;
  estimatedCostUsd?: number;
  result?: { response?: string; actionsTaken?: string[] };
}

export interface Transcript {
  run?: RunInfo;
  sections: Section[];
  /** The latest phase the run entered. */
  phase?: string;
  plan?: unknown;
  /** Usage and cost summed over the messages seen so far. */
  usage: Usage;
  costUsd: number;
  /** The run's final state (`stepwise.run_ended`). */
  ended?: Ending;
  /** How the stream ended: RUN_FINISHED (succeeded or cancelled) or RUN_ERROR. */
  finished?: { outcome: 'succeeded' | 'cancelled' | 'failed'; message?: string; code?: string };
  /** The id of the last event applied: where a resumed stream continues. */
  lastEventId?: string;
  /** How many events were applied. */
  events: number;
  /** Ids of the events applied, and where each message and tool call sits (shared by every state of one fold). */
  readonly index: FoldIndex;
}

interface FoldIndex {
  seen: Set<string>;
  items: Map<string, { section: number; item: number }>;
}

/** The state before the first event. */
export function emptyTranscript(): Transcript {
  return { sections: [], usage: zeroUsage, costUsd: 0, events: 0, index: { seen: new Set(), items: new Map() } };
}

/** Folds a list of events, from the empty state. */
export function foldEvents(events: readonly StreamEvent[]): Transcript {
  return events.reduce<Transcript>((t, event) => applyEvent(t, event), emptyTranscript());
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A `{ name, version }` of the stream, or undefined when it is not one. */
function definitionRef(v: unknown): DefinitionRef | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { name, version } = v as Record<string, unknown>;
  return typeof name === 'string' && typeof version === 'string' ? { name, version } : undefined;
}
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});

/** The transcript after one more event; `id` is the event's SSE id (an event seen before changes nothing). */
export function applyEvent(t: Transcript, event: StreamEvent, id?: string): Transcript {
  if (id !== undefined) {
    if (t.index.seen.has(id)) return t;
    t.index.seen.add(id);
  }
  const next = reduce(t, event);
  return { ...next, events: t.events + 1, ...(id !== undefined ? { lastEventId: id } : {}) };
}

function reduce(t: Transcript, e: StreamEvent): Transcript {
  switch (e.type) {
    case 'RUN_STARTED': {
      const runId = str(e.runId);
      return runId && !t.run ? { ...t, run: { runId } } : t;
    }
    case 'STEP_STARTED': {
      const agent = str(e.stepName) ?? 'agent';
      const open = t.sections.at(-1);
      // A step that is already open (a replay of its start) is not opened twice.
      if (open && open.agent === agent && !open.finished) return t;
      return { ...t, sections: [...t.sections, { agent, items: [], finished: false }] };
    }
    case 'STEP_FINISHED': {
      const at = lastSectionOf(t, str(e.stepName));
      return at < 0 ? t : updateSection(t, at, (s) => ({ ...s, finished: true }));
    }
    case 'TEXT_MESSAGE_START': {
      const id = str(e.messageId);
      if (!id || t.index.items.has(id)) return t;
      return addItem(t, { kind: 'text', id, text: '', open: true, abandoned: false });
    }
    case 'TEXT_MESSAGE_CONTENT':
      return updateItem(t, str(e.messageId), 'text', (item) => ({ ...item, text: item.text + (str(e.delta) ?? '') }));
    case 'TEXT_MESSAGE_END':
      return updateItem(t, str(e.messageId), 'text', (item) => ({ ...item, open: false }));
    case 'TOOL_CALL_START': {
      const id = str(e.toolCallId);
      if (!id || t.index.items.has(id)) return t;
      const parent = str(e.parentMessageId);
      return addItem(t, {
        kind: 'tool',
        id,
        name: str(e.toolCallName) ?? 'tool',
        args: '',
        argsDone: false,
        ...(parent ? { parentMessageId: parent } : {}),
        abandoned: false,
      });
    }
    case 'TOOL_CALL_ARGS':
      return updateItem(t, str(e.toolCallId), 'tool', (item) => ({ ...item, args: item.args + (str(e.delta) ?? '') }));
    case 'TOOL_CALL_END':
      return updateItem(t, str(e.toolCallId), 'tool', (item) => ({ ...item, argsDone: true }));
    case 'TOOL_CALL_RESULT':
      return updateItem(t, str(e.toolCallId), 'tool', (item) => ({ ...item, result: { ...item.result, content: str(e.content) ?? '' } }));
    case 'CUSTOM':
      return custom(t, str(e.name) ?? '', obj(e.value));
    case 'RUN_FINISHED': {
      const outcome = obj(e.outcome);
      return { ...t, finished: { outcome: outcome.type === 'cancelled' ? 'cancelled' : 'succeeded' } };
    }
    case 'RUN_ERROR': {
      const code = str(e.code);
      return { ...t, finished: { outcome: 'failed', message: str(e.message) ?? 'The run failed.', ...(code ? { code } : {}) } };
    }
    default:
      return t;
  }
}

function custom(t: Transcript, name: string, v: Record<string, unknown>): Transcript {
  switch (name) {
    case 'stepwise.run': {
      const runId = str(v.runId) ?? t.run?.runId;
      if (!runId) return t;
      const info: RunInfo = { runId };
      for (const key of ['mode', 'goal', 'sessionId', 'createdAt'] as const) {
        const value = str(v[key]);
        if (value !== undefined) info[key] = value;
      }
      for (const key of ['agent', 'workflow'] as const) {
        const ref = definitionRef(v[key]);
        if (ref) info[key] = ref;
      }
      return { ...t, run: info };
    }
    case 'stepwise.phase': {
      const phase = str(v.phase);
      if (!phase) return t;
      const at = lastSectionOf(t, str(v.agent));
      const withPhase = at < 0 ? t : updateSection(t, at, (s) => ({ ...s, phase }));
      return { ...withPhase, phase };
    }
    case 'stepwise.usage': {
      const usage = usageOf(v.usage);
      const cost = num(v.estimatedCostUsd);
      const seq = num(v.seq);
      const id = `usage:${str(v.agent) ?? ''}:${seq ?? t.events}`;
      if (t.index.items.has(id)) return t;
      const added = addItem(t, { kind: 'usage', id, ...(seq !== undefined ? { seq } : {}), usage, ...(cost !== undefined ? { costUsd: cost } : {}) });
      return { ...added, usage: addUsage(t.usage, usage), costUsd: t.costUsd + (cost ?? 0) };
    }
    case 'stepwise.approval_requested':
      return updateItem(t, str(v.toolCallId), 'tool', (item) => {
        const gate = str(v.gate);
        return { ...item, approval: { ...item.approval, input: v.input, ...(gate ? { gate } : {}) } };
      });
    case 'stepwise.approval_decided': {
      const decision = v.decision === 'approve' || v.decision === 'deny' ? v.decision : undefined;
      if (!decision) return t;
      return updateItem(t, str(v.toolCallId), 'tool', (item) => {
        const approval: Approval = { ...item.approval, decision };
        for (const key of ['decidedBy', 'reason', 'message'] as const) {
          const value = str(v[key]);
          if (value !== undefined) approval[key] = value;
        }
        if (v.edited !== undefined) approval.edited = v.edited;
        return { ...item, approval };
      });
    }
    case 'stepwise.tool_result':
      return updateItem(t, str(v.toolCallId), 'tool', (item) => ({
        ...item,
        result: { content: item.result?.content ?? '', isError: v.isError === true, ran: v.ran !== false },
      }));
    case 'stepwise.child_run_started': {
      const runId = str(v.runId);
      const agent = str(v.agent);
      if (!runId || !agent) return t;
      return updateItem(t, str(v.toolCallId), 'tool', (item) => ({ ...item, child: { runId, agent, ended: false } }));
    }
    case 'stepwise.child_run_ended':
      return updateItem(t, str(v.toolCallId), 'tool', (item) => (item.child ? { ...item, child: { ...item.child, ended: true, isError: v.isError === true } } : item));
    case 'stepwise.plan':
      return { ...t, plan: v.plan };
    case 'stepwise.attempt_abandoned': {
      const messageId = str(v.messageId);
      return messageId ? abandon(t, messageId) : t;
    }
    case 'stepwise.run_ended': {
      const error = obj(v.error);
      const result = obj(v.result);
      const ended: Ending = { status: str(v.status) ?? 'unknown' };
      const phase = str(v.phase);
      if (phase) ended.phase = phase;
      if (str(error.code)) ended.error = { code: str(error.code) ?? '', message: str(error.message) ?? '', ...(str(error.agent) ? { agent: str(error.agent) } : {}) };
      if (v.usage) ended.usage = usageOf(v.usage);
      const cost = num(v.estimatedCostUsd);
      if (cost !== undefined) ended.estimatedCostUsd = cost;
      if (v.result) {
        ended.result = {
          ...(str(result.response) !== undefined ? { response: str(result.response) } : {}),
          ...(Array.isArray(result.actionsTaken) ? { actionsTaken: result.actionsTaken.filter((a): a is string => typeof a === 'string') } : {}),
        };
      }
      return { ...t, ended, ...(phase ? { phase } : {}) };
    }
    default:
      return t;
  }
}

/** Marks the messages and calls of an abandoned model call: ids `<run>:<agent>:<seq>…` that carry its attempt. */
function abandon(t: Transcript, messageId: string): Transcript {
  const target = messageId.split(':');
  const attempt = target.at(-1);
  const sameAttempt = (id: string | undefined) => {
    if (!id) return false;
    if (id === messageId || id.startsWith(`${messageId}:`)) return true;
    const parts = id.split(':');
    return target.length > 3 && parts.slice(0, 3).join(':') === target.slice(0, 3).join(':') && parts.slice(3).includes(attempt ?? '');
  };
  let next = t;
  for (const [id, at] of t.index.items) {
    const item = t.sections[at.section]?.items[at.item];
    if (!item || item.kind === 'usage') continue;
    const mine = item.kind === 'text' ? sameAttempt(id) : sameAttempt(item.parentMessageId);
    if (mine && !item.abandoned) next = updateAt(next, at, (i) => ({ ...i, abandoned: true }));
  }
  return next;
}

function usageOf(value: unknown): Usage {
  const u = obj(value);
  return {
    inputTokens: num(u.inputTokens) ?? 0,
    outputTokens: num(u.outputTokens) ?? 0,
    cacheReadInputTokens: num(u.cacheReadInputTokens) ?? 0,
    cacheCreationInputTokens: num(u.cacheCreationInputTokens) ?? 0,
  };
}

function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadInputTokens: a.cacheReadInputTokens + b.cacheReadInputTokens,
    cacheCreationInputTokens: a.cacheCreationInputTokens + b.cacheCreationInputTokens,
  };
}

/** The index of the last section of `agent` (or the last section at all). */
function lastSectionOf(t: Transcript, agent: string | undefined): number {
  for (let i = t.sections.length - 1; i >= 0; i--) if (agent === undefined || t.sections[i]?.agent === agent) return i;
  return -1;
}

function updateSection(t: Transcript, at: number, change: (s: Section) => Section): Transcript {
  const section = t.sections[at];
  if (!section) return t;
  const sections = [...t.sections];
  sections[at] = change(section);
  return { ...t, sections };
}

/** Appends an item to the current section (one is opened if the stream began without a step). */
function addItem(t: Transcript, item: Item): Transcript {
  const base = t.sections.length ? t : { ...t, sections: [{ agent: 'agent', items: [], finished: false }] };
  const section = base.sections.length - 1;
  const current = base.sections[section] as Section;
  base.index.items.set(item.id, { section, item: current.items.length });
  return updateSection(base, section, (s) => ({ ...s, items: [...s.items, item] }));
}

function updateAt(t: Transcript, at: { section: number; item: number }, change: (item: Item) => Item): Transcript {
  return updateSection(t, at.section, (s) => {
    const item = s.items[at.item];
    if (!item) return s;
    const items = [...s.items];
    items[at.item] = change(item);
    return { ...s, items };
  });
}

function updateItem<K extends 'text' | 'tool'>(
  t: Transcript,
  id: string | undefined,
  kind: K,
  change: (item: Extract<Item, { kind: K }>) => Extract<Item, { kind: K }>,
): Transcript {
  const at = id === undefined ? undefined : t.index.items.get(id);
  if (!at) return t;
  return updateAt(t, at, (item) => (item.kind === kind ? change(item as Extract<Item, { kind: K }>) : item));
}

/** Every tool call of the transcript, in order. */
export function toolCalls(t: Transcript): (ToolItem & { agent: string })[] {
  return t.sections.flatMap((s) => s.items.filter((i): i is ToolItem => i.kind === 'tool').map((i) => ({ ...i, agent: s.agent })));
}

/** The calls that wait for a reviewer: asked about, not decided, no result, the run not over. */
export function waitingCalls(t: Transcript): (ToolItem & { agent: string })[] {
  if (t.finished || t.ended) return [];
  return toolCalls(t).filter((c) => c.approval && !c.approval.decision && !c.result && !c.abandoned);
}

/** The run's status: from its end, else running. */
export function statusOf(t: Transcript): string {
  if (t.ended) return t.ended.status;
  if (t.finished) return t.finished.outcome;
  return 'running';
}

/** The call's input as a value (the streamed JSON parsed), or undefined while it is incomplete. */
export function inputOf(call: Pick<ToolItem, 'args'>): unknown {
  try {
    return JSON.parse(call.args);
  } catch {
    return undefined;
  }
}
