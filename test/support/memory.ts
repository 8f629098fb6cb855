/**
 * In-memory fakes of the ports, with the same semantics as the DynamoDB and S3 adapters
 * (conditional writes, splicing through `assembleConversation`), for core tests without I/O.
 */
import { type Approval, type ApprovalRule, type ApprovalStore, type RunApprovals, type TaskTokens } from '../../functions/core/approvals/types.js';
import { policyTools } from '../../functions/core/approvals/policy.js';
import type { SpendStore } from '../../functions/core/budgets/types.js';
import { type Owner } from '../../functions/core/callers/types.js';
import { ownerKey, owns } from '../../functions/core/callers/access.js';
import {
  type Compaction,
  type Conversation,
  type ConversationRecord,
  type ConversationStore,
  type NewMessage,
  type ResultOptions,
  type Turn,
} from '../../functions/core/conversation/types.js';
import { assembleConversation, seqKey } from '../../functions/core/conversation/conversation.js';
import type { LiveAttempt, LiveFrom, LiveTexts } from '../../functions/core/live/types.js';
import type { AgentDefinitionStore, AgentName, AgentRef } from '../../functions/core/agents/types.js';
import type { ConversationFrom, RunEventSources } from '../../functions/core/stream/types.js';
import { type ToolResultBlock, type Usage, zeroUsage } from '../../functions/core/model/messages.js';
import type { Plan } from '../../functions/core/plan/types.js';
import { type Run, type RunError, type RunPage, type RunQuery, type RunStore, type RunTotals, type StepOutcome, summaryGoalChars } from '../../functions/core/runs/types.js';
import { FileTooLarge, type ReadOptions, type VersionedFile, type Workspace, type WorkspaceEntry, type WriteOptions, WriteConflict } from '../../functions/core/workspace/types.js';
import { checkPath } from '../../functions/core/workspace/paths.js';

export class MemoryConversationStore implements ConversationStore {
  /** Items by conversation, keyed like the DynamoDB sort key. */
  readonly items = new Map<string, Map<string, ConversationRecord>>();
  writes = 0;

  private partition(id: string): Map<string, ConversationRecord> {
    let p = this.items.get(id);
    if (!p) this.items.set(id, (p = new Map()));
    return p;
  }

  private sorted(id: string): ConversationRecord[] {
    return [...this.partition(id).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => structuredClone(r));
  }

  async load(conversationId: string): Promise<Conversation> {
    return assembleConversation(this.sorted(conversationId));
  }

  async append(conversationId: string, message: NewMessage): Promise<boolean> {
    const key = `m#${seqKey(message.seq)}`;
    const p = this.partition(conversationId);
    if (p.has(key)) return false;
    this.writes++;
    p.set(key, structuredClone({ kind: 'message', ...message }));
    return true;
  }

  async loadTurn(conversationId: string, seq: number): Promise<Turn | undefined> {
    const records = this.sorted(conversationId);
    const message = records.find((r) => r.kind === 'message' && r.seq === seq);
    if (!message || message.kind !== 'message') return undefined;
    const results: Turn['results'] = [];
    for (const r of records) if (r.kind === 'result' && r.seq === seq) results[r.index] = r.result;
    const { seq: s, role, content, meta } = message;
    return { message: { seq: s, role, content, meta }, results };
  }

  readonly fullOutputs = new Map<string, string>();

  async putResult(conversationId: string, seq: number, index: number, result: ToolResultBlock, options: ResultOptions = {}): Promise<ToolResultBlock> {
    const key = `m#${seqKey(seq)}#r#${index.toString().padStart(4, '0')}`;
    const p = this.partition(conversationId);
    const existing = p.get(key);
    if (existing?.kind === 'result') return structuredClone(existing.result);
    this.writes++;
    p.set(key, { kind: 'result', seq, index, result: structuredClone(result), ...(options.ran === false ? { ran: false } : {}) });
    if (options.fullOutput !== undefined) this.fullOutputs.set(`${conversationId}/${key}`, options.fullOutput);
    return result;
  }

  async putCompaction(conversationId: string, compaction: Compaction): Promise<Compaction> {
    const key = `m#${seqKey(compaction.atSeq)}#s`;
    const p = this.partition(conversationId);
    const existing = p.get(key);
    if (existing?.kind === 'compaction') return structuredClone(existing.compaction);
    this.writes++;
    p.set(key, { kind: 'compaction', compaction: structuredClone(compaction) });
    return compaction;
  }

  /** A fork's copy, as the DynamoDB adapter makes it: every item keyed before message `beforeSeq`, kept where present. */
  async copyBefore(from: string, to: string, beforeSeq: number): Promise<number> {
    const target = this.partition(to);
    let written = 0;
    for (const [key, record] of this.partition(from)) {
      if (key >= `m#${seqKey(beforeSeq)}` || target.has(key)) continue;
      target.set(key, structuredClone(record));
      this.writes++;
      written++;
    }
    return written;
  }

  /** How many items a conversation holds. */
  count(conversationId: string): number {
    return this.partition(conversationId).size;
  }

  /** The event stream's read, as the DynamoDB adapter's `itemsFrom`: this run's messages and every result from `from` on. */
  async itemsFrom(conversationId: string, from: ConversationFrom, runId: string): Promise<ConversationRecord[]> {
    const start = from.result === undefined ? `m#${seqKey(from.seq)}` : `m#${seqKey(from.seq)}#r#${from.result.toString().padStart(4, '0')}`;
    return [...this.partition(conversationId).entries()]
      .filter(([key, record]) => key >= start && record.kind !== 'compaction' && (record.kind !== 'message' || record.meta.runId === runId))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, record]) => structuredClone(record));
  }
}

/** Live attempts in memory, keyed as DynamoDB keys them. */
export class MemoryLiveTexts implements LiveTexts {
  readonly items = new Map<string, LiveAttempt>();

  put(attempt: LiveAttempt): void {
    this.items.set(`${attempt.runId}/${attempt.agent}#${seqKey(attempt.seq)}#${attempt.attempt}`, structuredClone(attempt));
  }

  async list(runId: string, from: LiveFrom): Promise<LiveAttempt[]> {
    const start = `${runId}/${from.agent}#${seqKey(from.seq)}#${from.attempt ?? ''}`;
    return [...this.items.entries()]
      .filter(([key]) => key >= start && key <= `${runId}/${from.agent}#~`)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, attempt]) => structuredClone(attempt));
  }
}

/** What the event stream reads, on the in-memory stores. */
export function memoryEventSources(conversations: MemoryConversationStore, runs: RunStore, approvals: ApprovalStore, live = new MemoryLiveTexts()): RunEventSources {
  return {
    conversationFrom: (conversationId, from, runId) => conversations.itemsFrom(conversationId, from, runId),
    liveTexts: live,
    runWithApprovals: async (runId) => ({ run: await runs.get(runId), approvals: await approvals.list(runId) }),
  };
}

export class MemoryRunStore implements RunStore {
  readonly runs = new Map<string, Run>();
  readonly counted = new Set<string>();

  async get(runId: string): Promise<Run | undefined> {
    const run = this.runs.get(runId);
    return run && structuredClone(run);
  }

  async create(run: Run): Promise<boolean> {
    if (this.runs.has(run.runId)) return false;
    this.runs.set(run.runId, structuredClone(run));
    return true;
  }

  async recordStep(runId: string, agent: AgentName, iteration: number, { usage, costUsd, result, call, handsOver, withChildren, day }: StepOutcome): Promise<RunTotals | undefined> {
    const run = this.runs.get(runId);
    const step = `${runId}/${agent}#${iteration}${call === 'summary' ? '#summary' : ''}`;
    if (!run || this.counted.has(step)) return undefined;
    this.counted.add(step);
    run.iterations[agent] = iteration + 1;
    if (result && handsOver) run.agentResults = { ...run.agentResults, [agent]: result };
    else if (result) run.result = result;
    const byAgent = (run.usageByAgent ??= {});
    const mine = (byAgent[agent] ??= { ...zeroUsage });
    for (const k of Object.keys(usage) as (keyof Usage)[]) {
      run.usage[k] += usage[k];
      mine[k] += usage[k];
    }
    run.estimatedCostUsd = (run.estimatedCostUsd ?? 0) + (costUsd ?? 0);
    const spent = day ? { [day]: (run.spentByDay?.[day] ?? 0) + (costUsd ?? 0) } : undefined;
    if (spent) run.spentByDay = { ...run.spentByDay, ...spent };
    return { usage: { ...run.usage }, estimatedCostUsd: run.estimatedCostUsd, ...(withChildren ? { childCostUsd: run.childCostUsd ?? 0 } : {}), ...(spent ? { spentByDay: spent } : {}) };
  }

  /** Newest first, by owner or tenant, as the table's indexes list them; the cursor is an offset. */
  async list(query: RunQuery): Promise<RunPage> {
    const scope = query.scope;
    const matching = [...this.runs.values()]
      .filter((run) => run.owner && ('owner' in scope ? owns(scope.owner, run.owner) : run.owner.tenant === scope.tenant))
      .filter((run) => query.status === undefined || run.status === query.status)
      .sort((a, b) => `${b.createdAt}#${b.runId}`.localeCompare(`${a.createdAt}#${a.runId}`));
    const from = query.cursor === undefined ? 0 : Number(query.cursor);
    const page = matching.slice(from, from + query.limit);
    const items = page.map((run) => ({
      runId: run.runId,
      mode: run.mode,
      goal: run.goal.slice(0, summaryGoalChars),
      status: run.status,
      phase: run.phase,
      createdAt: run.createdAt,
      updatedAt: run.updatedAt,
      estimatedCostUsd: run.estimatedCostUsd ?? 0,
      ...(run.approvals ? { approvals: run.approvals } : {}),
      ...(run.owner ? { owner: run.owner } : {}),
    }));
    return { items, ...(from + query.limit < matching.length ? { nextCursor: String(from + query.limit) } : {}) };
  }

  async countRunning(owner: Owner): Promise<number> {
    return [...this.runs.values()].filter((run) => run.status === 'running' && owns(owner, run.owner)).length;
  }

  async cancel(runId: string): Promise<boolean> {
    const run = this.runs.get(runId);
    if (run?.status !== 'running') return false;
    Object.assign(run, { status: 'cancelled', phase: 'cancelled' });
    return true;
  }

  async savePlan(runId: string, plan: Plan): Promise<void> {
    const run = this.runs.get(runId);
    if (run) run.plan = structuredClone(plan);
  }

  async failIfRunning(runId: string, error: RunError): Promise<boolean> {
    const run = this.runs.get(runId);
    if (run?.status !== 'running') return false;
    Object.assign(run, { status: 'failed', phase: 'failed', error: structuredClone(error) });
    delete run.currentAgent;
    return true;
  }

  async finish(runId: string, outcome: Partial<Run>, options: { ifRunning?: boolean } = {}): Promise<boolean> {
    const run = this.runs.get(runId);
    if (!run || (options.ifRunning && run.status !== 'running')) return false;
    Object.assign(run, outcome);
    return true;
  }

  async addChild(runId: string, toolUseId: string, child: { runId: string; agent: string }): Promise<void> {
    const run = this.runs.get(runId);
    if (run) run.children = { ...run.children, [toolUseId]: child };
  }

  async markUntrusted(runId: string): Promise<void> {
    const run = this.runs.get(runId);
    if (run) run.untrustedContent = true;
  }

  private readonly rolledUp = new Set<string>();

  async rollUp(runId: string, toolUseId: string, spent: Pick<Run, 'usage'> & { estimatedCostUsd: number }): Promise<RunTotals | undefined> {
    const run = this.runs.get(runId);
    if (!run || this.rolledUp.has(`${runId}/${toolUseId}`)) return undefined;
    this.rolledUp.add(`${runId}/${toolUseId}`);
    for (const k of Object.keys(spent.usage) as (keyof Usage)[]) run.usage[k] += spent.usage[k];
    run.estimatedCostUsd = (run.estimatedCostUsd ?? 0) + spent.estimatedCostUsd;
    run.childCostUsd = (run.childCostUsd ?? 0) + spent.estimatedCostUsd;
    return { usage: { ...run.usage }, estimatedCostUsd: run.estimatedCostUsd, childCostUsd: run.childCostUsd };
  }
}

/** The daily spend counter in memory: per owner and day, each run's cost (raised, never lowered). */
export class MemorySpendStore implements SpendStore {
  readonly runs = new Map<string, number>();

  async spentOn(owner: Owner, day: string): Promise<number> {
    const prefix = `${ownerKey(owner)}#${day}#`;
    return [...this.runs.entries()].filter(([key]) => key.startsWith(prefix)).reduce((sum, [, usd]) => sum + usd, 0);
  }

  async recordRun(owner: Owner, day: string, runId: string, usd: number): Promise<void> {
    const key = `${ownerKey(owner)}#${day}#${runId}`;
    if ((this.runs.get(key) ?? -1) < usd) this.runs.set(key, usd);
  }
}

export class MemoryApprovalStore implements ApprovalStore {
  readonly approvals = new Map<string, Approval>();
  /** The approval lists of runs, as the run records hold them. */
  readonly policies = new Map<string, string[]>();

  /** Rules of a run's policy, beside its gated tools in `policies`. */
  readonly rules = new Map<string, ApprovalRule[]>();

  /** With `runs`, a run's policy is its record's (as the DynamoDB store reads it) unless `policies` or `rules` name the run. */
  constructor(private readonly runs?: Pick<RunStore, 'get'>) {}

  async policyFor(runId: string): Promise<RunApprovals> {
    const rules = this.rules.get(runId);
    if (!rules && !this.policies.has(runId) && this.runs) return (await this.runs.get(runId))?.approvals ?? { tools: [] };
    // Set by hand, it is the run's own policy: its rules approve what it gates.
    const tools = this.policies.get(runId) ?? [];
    return { tools, layers: [{ from: 'run', tools, ...(rules ? { rules } : {}) }] };
  }
  async toolsFor(runId: string): Promise<readonly string[]> {
    return policyTools(await this.policyFor(runId));
  }

  async get(runId: string, toolUseId: string): Promise<Approval | undefined> {
    const approval = this.approvals.get(`${runId}/${toolUseId}`);
    return approval && structuredClone(approval);
  }

  async list(runId: string): Promise<Approval[]> {
    return [...this.approvals.values()].filter((a) => a.runId === runId).map((a) => structuredClone(a));
  }

  async open(approval: Approval): Promise<Approval> {
    const key = `${approval.runId}/${approval.toolUseId}`;
    if (!this.approvals.has(key)) this.approvals.set(key, structuredClone(approval));
    return structuredClone(this.approvals.get(key) as Approval);
  }

  async attachToken(runId: string, toolUseId: string, token: string): Promise<'attached' | 'decided' | 'missing'> {
    const approval = this.approvals.get(`${runId}/${toolUseId}`);
    if (!approval) return 'missing';
    if (approval.decision) return 'decided';
    approval.token = token;
    return 'attached';
  }

  async decide(runId: string, toolUseId: string, decision: Pick<Approval, 'decision' | 'reason' | 'decidedAt' | 'decidedBy' | 'message' | 'editedInput'>) {
    const approval = this.approvals.get(`${runId}/${toolUseId}`);
    if (!approval || approval.decision) return { recorded: false, approval: approval && structuredClone(approval) };
    Object.assign(approval, decision);
    return { recorded: true, approval: structuredClone(approval) };
  }
}

/** Task tokens that remember what they were sent; a token listed in `gone` no longer waits. */
export class RecordingTokens implements TaskTokens {
  readonly resumed: { token: string; output: unknown }[] = [];
  readonly gone = new Set<string>();
  async resume(token: string, output: unknown): Promise<boolean> {
    if (this.gone.has(token)) return false;
    this.resumed.push({ token, output });
    return true;
  }
}

/** A workspace in memory that keeps versions like S3's ETags, so conditional writes behave as on S3. */
export class MemoryWorkspace implements Workspace {
  readonly files = new Map<string, Uint8Array>();
  private readonly meta = new Map<string, { version: string; writtenBy?: string }>();
  private writes = 0;
  /** Runs just before each write lands, to let a test slip another write in between. */
  beforeWrite?: (path: string) => Promise<void> | void;

  async read(path: string, options: ReadOptions = {}): Promise<Uint8Array | undefined> {
    return (await this.readVersioned(path, options))?.bytes;
  }

  async readVersioned(path: string, options: ReadOptions = {}): Promise<VersionedFile | undefined> {
    const normal = checkPath(path);
    const file = this.files.get(normal);
    if (!file) return undefined;
    if (options.maxBytes !== undefined && file.byteLength > options.maxBytes) throw new FileTooLarge(normal, file.byteLength, options.maxBytes);
    const meta = this.meta.get(normal) ?? { version: 'v0' };
    return { bytes: new Uint8Array(file), ...meta };
  }

  async write(path: string, content: Uint8Array, options: WriteOptions = {}): Promise<void> {
    const normal = checkPath(path);
    await this.beforeWrite?.(normal);
    if (options.ifVersion !== undefined && (this.meta.get(normal)?.version ?? (this.files.has(normal) ? 'v0' : undefined)) !== options.ifVersion) {
      throw new WriteConflict(`Writing ${path}: the file changed since it was read.`);
    }
    this.files.set(normal, new Uint8Array(content));
    this.meta.set(normal, { version: `v${++this.writes}`, ...(options.writtenBy ? { writtenBy: options.writtenBy } : {}) });
  }

  async list(folder: string, limit: number): Promise<{ entries: WorkspaceEntry[]; truncated: boolean }> {
    const root = checkPath(folder, { allowRoot: true });
    const prefix = root ? `${root}/` : '';
    const entries = [...this.files.entries()]
      .filter(([path]) => path.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([path, bytes]) => ({ path, size: bytes.byteLength }));
    return { entries: entries.slice(0, limit), truncated: entries.length > limit };
  }
}

/**
 * Agent definitions in memory, once per version, kept as JSON text as the DynamoDB adapter keeps
 * them (the first write of a version stands); every read and write is recorded, so a test can count them.
 */
export class MemoryAgentDefinitionStore implements AgentDefinitionStore {
  readonly definitions = new Map<string, string>();
  readonly gets: AgentRef[] = [];
  readonly puts: AgentRef[] = [];

  async get(ref: AgentRef): Promise<unknown> {
    this.gets.push({ ...ref });
    const json = this.definitions.get(`${ref.name}@${ref.version}`);
    return json === undefined ? undefined : (JSON.parse(json) as unknown);
  }

  async put(ref: AgentRef, definition: unknown): Promise<void> {
    this.puts.push({ ...ref });
    const key = `${ref.name}@${ref.version}`;
    if (!this.definitions.has(key)) this.definitions.set(key, JSON.stringify(definition));
  }
}

/** A run record with defaults, for tests. */
export function newRun(runId: string, goal: string, extra: Partial<Run> = {}): Run {
  const now = '2026-01-01T00:00:00.000Z';
  return {
    runId,
    mode: 'single',
    goal,
    status: 'running',
    phase: 'executing',
    iterations: {},
    usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    createdAt: now,
    updatedAt: now,
    ...extra,
  };
}
