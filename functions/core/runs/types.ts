/**
 * The run record: what `GET /runs/{runId}` shows, and the port that keeps it.
 */
import * as z from 'zod';
import { RunApprovals } from '../approvals/types.js';
import { Budget } from '../budgets/types.js';
import { Owner } from '../callers/types.js';
import { AgentName, AgentRef } from '../agents/types.js';
import { Usage } from '../model/messages.js';
import { named } from '../errors/errors.js';
import { Plan } from '../plan/types.js';
import { RunTrace } from '../traces/types.js';
import { MemorySettings } from '../memory/types.js';

export const RunMode = z.enum(['single', 'multi']);

export type RunMode = z.infer<typeof RunMode>;

export const RunStatus = z.enum(['running', 'succeeded', 'failed', 'cancelled']);

export type RunStatus = z.infer<typeof RunStatus>;

export const Phase = z.enum(['idle', 'planning', 'executing', 'complete', 'failed', 'cancelled']);

export type Phase = z.infer<typeof Phase>;

export const RunError = z.object({
  code: z.string(),
  message: z.string(),
  agent: AgentName.optional(),
});

export type RunError = z.infer<typeof RunError>;

export const RunResult = z.object({
  response: z.string(),
  actionsTaken: z.array(z.string()),
  /** The validated final answer, when the run asked for structured output. */
  output: z.record(z.string(), z.unknown()).optional(),
});

export type RunResult = z.infer<typeof RunResult>;

/** Where a forked run came from: the source run, the agent whose conversation it copied, and the message it was cut at. */
export const ForkedFrom = z
  .object({ runId: z.string(), agent: AgentName, seq: z.number().int().nonnegative() })
  .meta({ description: 'The run this one was forked from: its conversation before message `seq` of `agent`, and its workspace.' });

export type ForkedFrom = z.infer<typeof ForkedFrom>;

export const Run = z.object({
  runId: z.string(),
  mode: RunMode,
  goal: z.string(),
  /** Who started the run; absent only on runs made before runs had owners. */
  owner: Owner.optional(),
  sessionId: z.string().optional(),
  model: z.string().optional(),
  /** The agent the run was started with (`POST /runs { agent }`; `assistant` for `mode: "single"`) and its version. */
  agent: AgentRef.optional(),
  /** The workflow the run was started with (`plan-and-build` for `mode: "multi"`) and its version. */
  workflow: z.object({ name: z.string(), version: z.string() }).optional(),
  /** The deployed eval whose case (or judge) this run is (docs/evals.md, "Deployed"). */
  evalId: z.string().optional(),
  /**
   * The definition each agent of the run follows, with its place in the run (the conversation it
   * keeps), in the order they work: fixed when the run starts, so a deployment that changes an
   * agent never changes a running run. Absent on runs made before agents were data (they follow
   * the built-ins).
   */
  agents: z
    .array(
      AgentRef.extend({
        place: AgentName,
        step: z.number().int().nonnegative().optional(),
        /** An agent the run's agents may call as a tool (`agent:<name>`), at the version a child run follows: no place of its own. */
        callee: z.literal(true).optional(),
      }),
    )
    .optional(),
  /** A child run: the run whose agent called this one as a tool, and how deep the calls go (a top run is 0). */
  parentRunId: z.string().optional(),
  depth: z.number().int().nonnegative().optional(),
  /** The part of `estimatedCostUsd` the run's child runs spent (rolled up as each one's result is read). */
  childCostUsd: z.number().nonnegative().optional(),
  /** The child runs the run's agents started, by the id of the tool call that started each. */
  children: z.record(z.string(), z.object({ runId: z.string(), agent: AgentName })).optional(),
  /** The answers of a workflow's agents before its last step, by place: what the next step starts from. */
  agentResults: z.record(AgentName, RunResult).optional(),
  /** The tools whose calls wait for a reviewer in this run (the deployment's and the request's). */
  approvals: RunApprovals.optional(),
  /** Set on a fork (`POST /runs/{runId}/fork`): where its conversation and workspace came from. */
  forkedFrom: ForkedFrom.optional(),
  /** Set on a run a schedule started (docs/schedules.md). */
  scheduleId: z.string().optional(),
  /**
   * The run has taken in untrusted content (a result of an `untrusted` tool or of a child run,
   * docs/tools.md "Capabilities"): its `egress` calls wait for a reviewer. Never unset.
   */
  untrustedContent: z.literal(true).optional(),
  /** What the run may spend: the request's budget, with the deployment's default for what it leaves out. */
  budget: Budget.optional(),
  /** The JSON Schema the final answer must match (structured output). */
  output: z.object({ schema: z.record(z.string(), z.unknown()) }).optional(),
  /** The run's place in its OpenTelemetry trace, fixed at intake (docs/traces.md). */
  trace: RunTrace.optional(),
  /** The long-term memory its agents use (docs/memory.md): the request's, else its agent definition's. */
  memory: MemorySettings.optional(),
  status: RunStatus,
  phase: Phase,
  currentAgent: AgentName.optional(),
  plan: Plan.optional(),
  result: RunResult.optional(),
  error: RunError.optional(),
  iterations: z.partialRecord(AgentName, z.number().int().nonnegative()),
  usage: Usage,
  /** The same token counts, per agent. */
  usageByAgent: z.partialRecord(AgentName, Usage).optional(),
  /**
   * The model cost so far in USD, from Claude's list prices (`core/model/prices.ts`); calls to a model
   * without a known price add nothing.
   */
  estimatedCostUsd: z.number().nonnegative().optional(),
  /**
   * What the run's own model calls cost, per UTC day the calls were counted (`yyyy-mm-dd`): the
   * days its owner's daily budget counts them toward (a child run's calls are the child's).
   */
  spentByDay: z.record(z.string(), z.number().nonnegative()).optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export type Run = z.infer<typeof Run>;

/** The places of a run's agents, in the order they work (`single`, or `architect` and `coder`, for runs made before agents were data). */
export function placesOf(run: Pick<Run, 'mode' | 'agents'>): string[] {
  if (run.agents) return run.agents.filter((agent) => !agent.callee).map((agent) => agent.place);
  return run.mode === 'single' ? ['single'] : ['architect', 'coder'];
}

/**
 * Whether the agent at `place` hands its answer over to a later step of the run's workflow (it is
 * not in the last step): its answer is kept in `agentResults`, and the run's result and output
 * schema are the last step's.
 */
export function handsOver(run: Pick<Run, 'agents'> | undefined, place: string): boolean {
  const mine = run?.agents?.find((agent) => agent.place === place)?.step;
  return mine !== undefined && (run?.agents ?? []).some((agent) => (agent.step ?? 0) > mine);
}

/** The definition the agent at `place` follows, if the run recorded one. */
export function agentAt(run: Pick<Run, 'agents'> | undefined, place: string): AgentRef | undefined {
  const found = run?.agents?.find((agent) => agent.place === place && !agent.callee);
  return found && { name: found.name, version: found.version };
}

/** What a step needs of its run record besides the conversation (docs/costs.md, "Budgets"; docs/http-api.md, "Structured output"). */
export type RunControls = Pick<Run, 'runId' | 'owner' | 'createdAt' | 'budget' | 'output' | 'usage' | 'estimatedCostUsd' | 'agents' | 'childCostUsd' | 'spentByDay' | 'trace' | 'memory' | 'sessionId'>;

/** What one inference step adds to its run. */
export interface StepOutcome {
  usage: Usage;
  /** The step's estimated model cost in USD, when the model's price is known. */
  costUsd?: number;
  /** The run's result, when this step finished the agent that answers the run. */
  result?: RunResult;
  /** The result is the agent's answer to the next step of its workflow (`agentResults`), not the run's. */
  handsOver?: boolean;
  /** The agent may call agents: the totals say what of the cost its child runs spent (`childCostUsd`). */
  withChildren?: boolean;
  /**
   * Which model call of the step this is: a step that compacts the conversation makes a summary
   * call before its answer, counted apart (and first) so a budget can stop the run between them.
   * @default 'answer'
   */
  call?: 'answer' | 'summary';
  /** The UTC day the call is counted toward (`yyyy-mm-dd`): its cost is added to `spentByDay` of that day. */
  day?: string;
}

/** What a run has spent so far, in total. */
export type RunTotals = Pick<Run, 'usage'> & {
  estimatedCostUsd: number;
  /** The part of `estimatedCostUsd` its child runs spent (counted by them in their owner's daily spend). */
  childCostUsd?: number;
  /** The day the call was counted toward, with what the run's own calls spent on it so far. */
  spentByDay?: Record<string, number>;
};

/** Durable run records. */
export interface RunStore {
  get(runId: string): Promise<Run | undefined>;
  /** Creates the record unless a run with that id exists; `false` when it did. */
  create(run: Run): Promise<boolean>;
  /**
   * Adds one inference step's usage, cost and iteration count, once per (agent, iteration, call)
   * however often it is called, so a retried step is not counted twice. Answers the run's totals
   * after the addition, or `undefined` when there was none (counted already, or no such run).
   */
  recordStep(runId: string, agent: AgentName, iteration: number, outcome: StepOutcome): Promise<RunTotals | undefined>;
  /** Stores the Architect's plan on the run. */
  savePlan(runId: string, plan: Plan): Promise<void>;
  /** One page of runs, newest first: an owner's, or all of a tenant's. */
  list(query: RunQuery): Promise<RunPage>;
  /** How many runs of the owner are running now (a quota's count; it may lag a moment). */
  countRunning(owner: Owner): Promise<number>;
  /** Marks a running run cancelled; `false` when it was not running. */
  cancel(runId: string): Promise<boolean>;
  /**
   * Marks a run that is still running failed with `error` (the agent at work, if any, is kept in
   * it); `false`, changing nothing, when the run had ended.
   */
  failIfRunning(runId: string, error: RunError): Promise<boolean>;
  /** Marks the run finished; with `ifRunning`, only a run still running (`false` when it was not). */
  finish(runId: string, outcome: Pick<Run, 'status' | 'phase'> & Partial<Pick<Run, 'result' | 'error'>>, options?: { ifRunning?: boolean }): Promise<boolean | void>;
  /** Records a child run that a tool call started (once per call). */
  addChild(runId: string, toolUseId: string, child: { runId: string; agent: string }): Promise<void>;
  /** Records that the run has taken in untrusted content (`untrustedContent`); nothing for a run that does not exist. */
  markUntrusted(runId: string): Promise<void>;
  /** Adds a child run's spend to the run's totals, once per call however often it is asked; the totals after, or undefined when counted before. */
  rollUp(runId: string, toolUseId: string, spent: Pick<Run, 'usage'> & { estimatedCostUsd: number }): Promise<RunTotals | undefined>;
}

/** The longest goal a run listing shows. */
export const summaryGoalChars = 200;

/** A run as `GET /runs` lists it. */
export const RunSummary = Run.pick({
  runId: true,
  mode: true,
  status: true,
  phase: true,
  createdAt: true,
  updatedAt: true,
}).extend({
  goal: z.string().max(summaryGoalChars),
  estimatedCostUsd: z.number().nonnegative(),
  /** The tool calls waiting for a reviewer. */
  waitingFor: z.number().int().nonnegative(),
});

export type RunSummary = z.infer<typeof RunSummary>;

/** Which runs to list. */
export interface RunQuery {
  /** Whose runs: one owner's, or (`tenant`) every run of the owner's tenant. */
  scope: { owner: Owner } | { tenant: string | undefined };
  status?: RunStatus;
  limit: number;
  /** Where the previous page ended (opaque). */
  cursor?: string;
}

/** One page of a listing; `waitingFor` is counted by the caller. */
export interface RunPage {
  items: (Omit<RunSummary, 'waitingFor'> & Pick<Run, 'approvals' | 'owner'>)[];
  nextCursor?: string;
}

/** A listing's cursor that no earlier page of it returned (400). */
export class InvalidCursor extends named('InvalidCursor') {}

/**
 * The run was cancelled: its inference step calls the model no more, even where stopping its
 * execution failed; the loop ends and the run stays `cancelled`.
 */
export class RunCancelled extends named('RunCancelled') {}
