/**
 * The hook points of the two steps (docs/ARCHITECTURE.md, "The step pipeline"). A step is a
 * short fixed pipeline; each feature (budgets, compaction, structured output, live text, approvals,
 * the run's result, external tools, the size of a tool result) lives in a folder of its own and
 * registers at the points it needs. The steps call a point's hooks in the order the features are
 * listed (`steps/features.ts`); a hook that throws fails the step, and no later hook of that point
 * runs.
 *
 *   inference: load ─ continueWith ─> request ─> beforeModel ─> aroundModel(call) ─> store
 *              ─> afterModel ─> (count) ─ afterCount ─> settle
 *   tool:      load call ─> beforeTool ─> run ─> afterTool ─> store
 */
import type { AgentDefinitionStore, AgentName, AgentProfile } from '../agents/types.js';
import type { Approval, ApprovalStore } from '../approvals/types.js';
import type { BudgetSettings, SpendStore } from '../budgets/types.js';
import type { ContextEditing, ContextPolicy } from '../compaction/types.js';
import type { Compaction, Conversation, ConversationStore, StoredMessage, Turn } from '../conversation/types.js';
import type { LivePolicy, LiveText } from '../live/types.js';
import type { ModelProvider, ModelRequest, ModelResponse, ModelSettings, ToolSpec } from '../model/types.js';
import type { RunControls, RunResult, RunStore, RunTotals } from '../runs/types.js';
import type { PlanStore, ToolLimits, Tools } from '../tools/types.js';
import type { Workspace } from '../workspace/types.js';
import type { TraceSettings } from '../traces/types.js';
import type { MemoryLimits, MemoryStore } from '../memory/types.js';
import type { ContentBlock, StopReason, ToolResultBlock, ToolUseBlock } from '../model/messages.js';
import type { Capability, ExternalToolsPort, ToolCatalog } from '../tools/external/types.js';
import type { ChildStart, InferenceInput, InferenceResult, ToolInput } from './types.js';

/** What every hook of an inference step sees: its input, its dependencies, and what it read first. */
export interface InferenceStep {
  readonly input: InferenceInput;
  readonly deps: InferenceDeps;
  readonly conversationId: string;
  readonly profile: AgentProfile;
  /** The run's controls (owner, budget, output schema) as the step read them; absent when the run has no record. */
  readonly run: RunControls | undefined;
}

/** The part of every request of a step that precedes its messages: the same bytes every step of a run (invariant 4). */
export interface StepRequest {
  system: string;
  tools: ToolSpec[];
  /** The run's external tools, once a feature has listed them. */
  catalog?: ToolCatalog;
}

/** The step's model call, as the hooks around it see it. */
export interface ModelCall extends InferenceStep {
  readonly request: Readonly<StepRequest>;
  readonly model: string;
  /** The most tokens of the answer: the agent's own size, else the deployment's. */
  readonly maxTokens: number;
  /** The sequence number the answer will have. */
  readonly seq: number;
  /** The conversation the model is sent: a feature may replace it with a shorter one (compaction). */
  conversation: Conversation;
  /** Counts another model call of this step (a summary): on the run record once, then the `afterCount` hooks. */
  count(summary: Compaction): Promise<void>;
}

/** What a hook around the model call may add to the request it passes on. */
export type CallOptions = Pick<ModelRequest, 'onProgress' | 'signal'>;

/** The stored answer of the step (made now, or found stored by a retry), and what the loop does with it. */
export interface Answer extends InferenceStep {
  readonly message: StoredMessage;
  /** The conversation up to and including the answer. */
  readonly conversation: Conversation;
  /** The answer's own stop reason. */
  readonly reason: StopReason;
  /** What the loop routes on next. @default the answer's stop reason */
  stopReason: InferenceResult['stopReason'];
  /** Whether the answer finishes the run (the answering agent ended its turn). */
  finished: boolean;
  /** The validated final answer, when the run asked for structured output. */
  output?: Record<string, unknown>;
  /** The run's result, recorded with the step's usage when the answer finishes the run. */
  result?: RunResult;
  /** The calls the loop runs now. */
  calls: ToolUseBlock[];
  /** Calls the step answers itself (structured output's `final_answer`), by position: stored after `afterCount`, before `settle`. */
  answered: { index: number; result: ToolResultBlock; ran: boolean }[];
  /** The names of the tools whose calls wait for a reviewer. */
  gated: ReadonlySet<string>;
  /** The child runs made for the calls of agents, by call id: the loop runs each as a nested execution. */
  children: Map<string, ChildStart>;
}

/** A model call of the step, counted on the run record. */
export interface Counted extends InferenceStep {
  readonly call: 'answer' | 'summary';
  /** The run's totals after the count; absent when the call was counted before (a retried step). */
  readonly totals: RunTotals | undefined;
  /** The answer, when it calls tools: a feature that stops the run answers its calls as not run. */
  readonly turn?: StoredMessage;
}

/** A feature of the inference step: the points it needs, each optional. */
export interface InferenceFeature {
  readonly name: string;
  /** What to tell the model when the run's last turn ended without what the run still needs (a `final_answer`). */
  continueWith?(step: InferenceStep, conversation: Conversation): ContentBlock[] | undefined;
  /** Shapes the request: the system prompt and the tools. */
  request?(step: InferenceStep, request: StepRequest): Promise<void> | void;
  /** Before the step's first model call: may stop the run, or shorten the conversation. */
  beforeModel?(call: ModelCall): Promise<void>;
  /** Around each model call of the answer (a retried call goes through again); the first listed is outermost. */
  aroundModel?(call: ModelCall, next: (options?: CallOptions) => Promise<ModelResponse>): Promise<ModelResponse>;
  /** What the stored answer means: whether it finishes the run, with what result, which calls run. */
  afterModel?(answer: Answer): Promise<void> | void;
  /** After a model call of the step is counted: may stop the run. */
  afterCount?(counted: Counted): Promise<void>;
  /** Before the step hands its calls to the loop. */
  settle?(answer: Answer): Promise<void>;
}

/** One call of a tool step, as its hooks see it. */
export interface ToolCall {
  readonly input: ToolInput;
  readonly deps: ToolDeps;
  readonly conversationId: string;
  readonly turn: Turn;
  /** The call's position in its turn, which is its result's too (invariant 6). */
  readonly index: number;
  /** The call as it runs: a feature may change its input (a reviewer's edit); the stored call stays as the model wrote it. */
  call: ToolUseBlock;
  /** Set before the tool runs to answer the call without running it (a denial). */
  answer?: ToolResultBlock;
  /** The decision on a gated call, once a feature settled it. */
  approval?: Approval;
}

/** Where a tool's output comes from: Stepwise's own code, an external tool, or another agent; and what the tool can do. */
export interface ToolOrigin {
  readonly kind: 'builtin' | 'external' | 'agent' | 'memory';
  readonly capabilities: readonly Capability[];
}

/** A tool call's result, before it is stored. */
export interface ToolOutcome extends ToolCall {
  /** What the model reads. */
  result: ToolResultBlock;
  /** Whether the tool ran (a denied or refused call did not). */
  readonly ran: boolean;
  /** Where the output came from; absent when a feature answered the call (a denial). */
  readonly from?: ToolOrigin;
  /** The whole output, kept beside a result the model reads cut. */
  fullOutput?: string;
}

/** A feature of the tool step. */
export interface ToolFeature {
  readonly name: string;
  beforeTool?(call: ToolCall): Promise<void>;
  afterTool?(outcome: ToolOutcome): Promise<void> | void;
}

/** What the inference step uses: its ports and settings. */
export interface InferenceDeps {
  conversations: ConversationStore;
  runs: RunStore;
  model: ModelProvider;
  settings: ModelSettings;
  /** The agent at a place of a run; by default the definition the run recorded, from `agentStore` (the built-ins without it). */
  profile?: (agent: AgentName) => AgentProfile;
  /** Where the definitions runs follow are kept. */
  agentStore?: AgentDefinitionStore;
  /** When to compact the conversation; Claude's 200K window by default. */
  context?: ContextPolicy;
  /** Which old tool results the model is no longer sent (context editing); none when absent. */
  contextEditing?: ContextEditing;
  /** Which tools need approval in a run, and where a deployment's gate opens a call's request; none when absent. */
  approvals?: Pick<ApprovalStore, 'toolsFor' | 'open'>;
  /** Whether an `egress` call of a run that has taken in untrusted content waits for a reviewer (`approvals/egress.ts`). @default true */
  reviewEgressAfterUntrusted?: boolean;
  /** MCP and Lambda tools, listed once per run; none when absent. */
  externalTools?: Pick<ExternalToolsPort, 'forRun'>;
  /** The daily limit per caller; none when absent. A run's own budget is on its record. */
  budgets?: Pick<BudgetSettings, 'dailyMaxUsd'>;
  /** What each caller's runs cost per day (needed for the daily limit). */
  spend?: SpendStore;
  clock?: () => Date;
  /** Where the answer is written while the model generates it; no live text when absent. */
  liveText?: LiveText;
  /** Pacing of live text and where its failures are logged; `defaultLivePolicy` when absent. */
  livePolicy?: Partial<LivePolicy>;
  /** Where the step's spans go (docs/traces.md); none described when absent. */
  traces?: TraceSettings;
  /** The features at its hook points, in order; `inferenceFeatures` when absent. */
  features?: readonly InferenceFeature[];
}

/** What the tool step uses: its ports and settings. */
export interface ToolDeps {
  conversations: ConversationStore;
  workspaceFor(runId: string): Workspace;
  /** The memory scope at a key prefix (`memory/scope.ts`); runs that ask for memory fail their memory calls without it. */
  memoryFor?(prefix: string): MemoryStore;
  /** The limits of a memory scope; `defaultMemoryLimits` when absent. */
  memoryLimits?: MemoryLimits;
  /** Where `finish_plan` stores a plan; the run store in practice. */
  plans?: PlanStore;
  /** The tools of the agent at a place of a run; by default its definition's (`runs` and `agentStore` find it). */
  tools?: (agent: AgentName) => Tools;
  /** Run records: the definitions a run's agents follow, the child runs whose outcome a call of an agent reads, and the mark of untrusted content. */
  runs?: Pick<RunStore, 'get' | 'finish' | 'rollUp'> & Partial<Pick<RunStore, 'markUntrusted'>>;
  agentStore?: AgentDefinitionStore;
  limits?: ToolLimits;
  /** The most characters of one tool output the model sees; longer output is cut with a note. */
  maxResultChars?: number;
  /** The decisions on gated calls. */
  approvals?: Pick<ApprovalStore, 'get' | 'decide'>;
  /** MCP and Lambda tools, as the run's stored catalog lists them; none when absent. */
  externalTools?: Pick<ExternalToolsPort, 'stored' | 'call'>;
  clock?: () => Date;
  /** Where the step's spans go (docs/traces.md); none described when absent. */
  traces?: TraceSettings;
  /** The features at its hook points, in order; `toolFeatures` when absent. */
  features?: readonly ToolFeature[];
}
