/**
 * The steps' inputs, results and dependencies: what the state machine passes between states is
 * ids and a few numbers (invariant 1, docs/ARCHITECTURE.md).
 */
import * as z from 'zod';
import { type ContextPolicy } from '../compaction/types.js';
import { type AgentProfile } from '../agents/types.js';
import { type ApprovalStore } from '../approvals/types.js';
import { type BudgetSettings, type SpendStore } from '../budgets/types.js';
import { type ConversationStore } from '../conversation/types.js';
import { type LivePolicy, type LiveText } from '../live/types.js';
import { StopReason } from '../model/messages.js';
import { type ModelProvider, type ModelSettings } from '../model/types.js';
import { AgentName } from '../agents/types.js';
import type { RunStore } from '../runs/types.js';
import { type ExternalTools } from '../tools/external/external-tools.js';
import { type PlanStore, type ToolLimits } from '../tools/types.js';
import { type ToolRegistry } from '../tools/registry.js';
import type { Workspace } from '../workspace/types.js';

export const InferenceInput = z.object({
  runId: z.string().min(1),
  agent: AgentName,
  iteration: z.number().int().nonnegative(),
  /** Defaults to the run's own conversation for this agent; a session names its own. */
  conversationId: z.string().min(1).optional(),
  /** The model the run asked for; empty or absent for the deployment's default. */
  model: z.string().optional(),
  /** The agent's iteration limit: a step at it answers `iteration_limit` before it reads anything (invariant 9). */
  maxIterations: z.number().int().positive().optional(),
  /**
   * Where this execution of the loop hands over to a fresh one (continue-as-new, docs/ARCHITECTURE.md): a step at it
   * returns `continue` at once, and the fresh execution runs it.
   */
  segmentEnd: z.number().int().positive().optional(),
});

export type InferenceInput = z.infer<typeof InferenceInput>;

export const ToolCallRef = z.object({
  id: z.string(),
  name: z.string(),
  /** Whether the call waits for a reviewer's decision before it runs. */
  needsApproval: z.boolean(),
});

/** What the state machine carries between states: ids and a few numbers (invariant 1, docs/ARCHITECTURE.md). */
export const InferenceResult = z.object({
  /**
   * The model's stop reason, or `answer_required`: the turn ended without the `final_answer` a
   * structured-output run needs, so the loop goes on and the next step asks for it.
   */
  stopReason: z.union([StopReason, z.literal('answer_required')]),
  /** The calls to run now; empty unless `stopReason` is `tool_use`. */
  toolCalls: z.array(ToolCallRef),
  /** Whether any of `toolCalls` waits for a reviewer: the loop runs such a turn's calls through its gate. */
  gated: z.boolean(),
  iteration: z.number().int().nonnegative(),
  /** The iteration the loop runs next (the state machine carries no counter of its own). */
  next: z.number().int().nonnegative(),
  /** The sequence number of the stored assistant message, for the tool steps. */
  seq: z.number().int().nonnegative(),
});

export type InferenceResult = z.infer<typeof InferenceResult>;

/**
 * A step at one of the loop's bounds, which did nothing: at `maxIterations` (`iteration_limit`: the
 * run fails with `MaxIterationsExceeded`), or at its execution's `segmentEnd` (`continue`: a fresh
 * execution runs this iteration, continue-as-new).
 */
export interface LoopBound {
  stopReason: 'iteration_limit' | 'continue';
  toolCalls: [];
  gated: false;
  iteration: number;
  next: number;
}

export interface InferenceDeps {
  conversations: ConversationStore;
  runs: RunStore;
  model: ModelProvider;
  settings: ModelSettings;
  profile?: (agent: AgentName) => AgentProfile;
  /** When to compact the conversation; Claude's 200K window by default. */
  context?: ContextPolicy;
  /** Which tools need approval in a run; none when absent. */
  approvals?: Pick<ApprovalStore, 'toolsFor'>;
  /** MCP and Lambda tools, listed once per run; none when absent. */
  externalTools?: Pick<ExternalTools, 'forRun'>;
  /** The daily limit per caller; none when absent. A run's own budget is on its record. */
  budgets?: Pick<BudgetSettings, 'dailyMaxUsd'>;
  /** What each caller's runs cost per day (needed for the daily limit). */
  spend?: SpendStore;
  clock?: () => Date;
  /** Where the answer is written while the model generates it; no live text when absent. */
  liveText?: LiveText;
  /** Pacing of live text and where its failures are logged; `defaultLivePolicy` when absent. */
  livePolicy?: Partial<LivePolicy>;
}

export const ToolInput = z.object({
  runId: z.string().min(1),
  agent: AgentName,
  conversationId: z.string().min(1).optional(),
  seq: z.number().int().nonnegative(),
  toolUseId: z.string().min(1),
  /** The call was gated: run it only if its approval says so. */
  needsApproval: z.boolean().optional(),
});

export type ToolInput = z.infer<typeof ToolInput>;

export const ToolStepResult = z.object({ toolUseId: z.string(), isError: z.boolean() });

export type ToolStepResult = z.infer<typeof ToolStepResult>;

export interface ToolDeps {
  conversations: ConversationStore;
  workspaceFor(runId: string): Workspace;
  /** Where `finish_plan` stores a plan; the run store in practice. */
  plans?: PlanStore;
  tools?: (agent: AgentName) => ToolRegistry;
  limits?: ToolLimits;
  /** The most characters of one tool output the model sees; longer output is cut with a note. */
  maxResultChars?: number;
  /** The decisions on gated calls. */
  approvals?: Pick<ApprovalStore, 'get' | 'decide'>;
  /** MCP and Lambda tools, as the run's stored catalog lists them; none when absent. */
  externalTools?: Pick<ExternalTools, 'stored' | 'call'>;
  clock?: () => Date;
}
