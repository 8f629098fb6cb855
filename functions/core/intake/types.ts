/**
 * Intake's ports, options and errors.
 */
import type { Definitions } from '../definitions/types.js';
import type { AgentDefinitionStore } from '../agents/types.js';
import { type BudgetSettings, type SpendStore } from '../budgets/types.js';
import { type Caller, type Owner } from '../callers/types.js';
import { named } from '../errors/errors.js';
import type { ForkedFrom, Run, RunStore } from '../runs/types.js';
import type { ScheduleStore } from '../schedules/types.js';
import { type ExternalToolNames } from '../tools/external/types.js';
import type { Workspace } from '../workspace/types.js';

export const maxGoalChars = 100_000;

export const defaultMaxIterations = 25;

/** The most files, and bytes of them together, a run request may seed its workspace with (`files`). */
export const maxSeedFiles = 100;
export const maxSeedBytes = 1_000_000;

/** What a deployment lets a run request name, beyond the fields' own rules: its models and its external tools. */
export type RunRequestRules = Pick<IntakeDeps, 'allowedModels' | 'externalToolNames' | 'agents'>;

/** What the orchestrator is started with: ids and limits only. */
export interface OrchestratorInput {
  runId: string;
  mode: Run['mode'];
  /** The place of a one-agent run's agent (`single` for the assistant), and the short name its executions carry. */
  agent: string;
  label: string;
  /** A team's workflow: its steps, each the agents that work at once (one, or a parallel step's), each with its own iteration limit. */
  steps?: { agent: string; label: string; maxIterations: number }[][];
  conversationId: string;
  maxIterations: number;
  /** The model the run asked for; empty for the deployment's default. */
  model: string;
}

/** Starts and stops a run's orchestrator; starting the same run twice starts it once. */
export interface RunStarter {
  start(input: OrchestratorInput): Promise<void>;
  /** Stops the run's executions, nested ones included. */
  stop(runId: string, reason: string): Promise<void>;
  /**
   * Has the orchestrator announce that the run was cancelled (`Stepwise Run Cancelled`), once
   * however often it is asked: a stopped execution announces nothing itself.
   */
  announceCancelled(runId: string): Promise<void>;
}

/** Remembers which run an `Idempotency-Key` started, and with which body, for a while. */
export interface IdempotencyStore {
  /** The run an unexpired key started and the hash of its body. */
  get(key: string, now: Date): Promise<{ runId: string; bodyHash: string } | undefined>;
  /** Records the key unless an unexpired record exists; returns the record that stands. */
  claim(key: string, record: { runId: string; bodyHash: string }, now: Date): Promise<{ runId: string; bodyHash: string }>;
}

/** One running run per session. */
export interface SessionLocks {
  /**
   * Makes `runId` the session's run unless another run holds it and still runs; returns the run
   * that holds the session afterwards. `isRunning` is `undefined` for a run with no record yet
   * (its intake is still under way): the lock then stands for a grace period.
   */
  acquire(sessionId: string, runId: string, isRunning: (runId: string) => Promise<boolean | undefined>): Promise<string>;
  /** Frees the session if `runId` still holds it; nothing otherwise (another run took it over). */
  release(sessionId: string, runId: string): Promise<void>;
}

/**
 * The running-runs quota as slots, one per run an owner may have running, each taken with a
 * conditional write, so parallel requests cannot race past the limit (docs/callers-and-security.md,
 * "Quotas"). A slot frees itself: it is taken over once its holder no longer runs, so no end of a
 * run (the orchestrator's own, a cancel, the execution-ended rule) has to give it back.
 */
export interface RunSlots {
  /**
   * Gives `runId` one of the owner's `limit` slots (`true`; also when it holds one already): a
   * free one, or one whose holder no longer runs (`isRunning` is `false`; `undefined`, a run with
   * no record yet, keeps its slot for a grace period). `false` when every slot is held.
   */
  take(owner: Owner, runId: string, limit: number, isRunning: (runId: string) => Promise<boolean | undefined>): Promise<boolean>;
  /** Frees the slot `runId` holds, if any (a request refused after it took one). */
  release(owner: Owner, runId: string): Promise<void>;
}

export interface IntakeDeps {
  runs: RunStore;
  starter: RunStarter;
  newId: () => string;
  clock?: () => Date;
  idempotency?: IdempotencyStore;
  sessions?: SessionLocks;
  /** Tools that need a reviewer's approval in every run of this deployment; a run may add more. */
  approvalTools?: readonly string[];
  /** The deployment's MCP servers and Lambda tools, which approval policies may name besides the built-in tools; none when absent. */
  externalToolNames?: ExternalToolNames;
  /** The deployment's agents and workflows; the built-ins only when absent. */
  agents?: Definitions;
  /** Where the definitions runs follow are kept, once per version; none kept when absent (tests of intake alone). */
  agentStore?: AgentDefinitionStore;
  /** The models a run may ask for; any when absent. Checked where bodies are validated. */
  allowedModels?: readonly string[];
  /** The most runs one principal may have running at once; no limit when absent. */
  maxRunningRuns?: number;
  /** The slots that hold the limit (needed when `maxRunningRuns` is set). */
  slots?: RunSlots;
  /** Event sources trusted to start runs on behalf of another caller (`onBehalfOf`). */
  trustedSources?: readonly string[];
  /** The default budget of a run and the daily limit per caller; none when absent. */
  budgets?: BudgetSettings;
  /** What each caller's runs cost per day, for the daily limit (needed when `budgets.dailyMaxUsd` is set). */
  spend?: Pick<SpendStore, 'spentOn'>;
  /**
   * Told of each run this intake created, once per run: a repeated request (idempotency key,
   * client run id, redelivered event) creates nothing and is not told (the `RunsStarted` metric).
   */
  onCreated?: (run: Run) => void;
  /** A run's workspace, where a request's `files` are written before it starts (the API has it; the event intake takes no files). */
  workspaceFor?(runId: string): Pick<Workspace, 'write'>;
  /** The schedules whose firings the intake admits (docs/schedules.md); a firing is refused when absent. */
  schedules?: ScheduleStore;
  /** Whether the deployment exports traces (docs/traces.md): each new run then records its place in a trace. */
  tracing?: boolean;
}

/** The same `Idempotency-Key` was sent with another body. */
export class IdempotencyConflict extends named('IdempotencyConflict') {}

/** Another run of the session is still running. */
export class SessionBusy extends named('SessionBusy') {}

export interface CreateRunOptions {
  /** Who starts the run: its owner. */
  caller: Caller;
  /** A client-chosen run id (events): starting it twice starts it once. */
  runId?: string;
  idempotencyKey?: string;
  /** The run is a fork of another (`core/fork/fork.ts`). */
  fork?: RunFork;
  /** The schedule that fired the run: recorded on it. */
  scheduleId?: string;
  /** The caller's W3C `traceparent`: the run's trace is a child of the caller's (ignored when malformed, as the spec says). */
  traceparent?: string;
}

/** What makes a run a fork: where it comes from, and the copy made before its record exists. */
export interface RunFork {
  from: ForkedFrom;
  /** Stands for the request in the idempotency check: the fork request, not the body derived from it. */
  requestHash: string;
  /**
   * Copies the source's conversation and workspace to the new run. Repeatable (a repeated request
   * completes a copy a crash cut short); never run once the fork's record exists.
   */
  copy(runId: string): Promise<void>;
}

/** A client-chosen run id that another caller's run already has. */
export class RunIdTaken extends named('RunIdTaken') {}

/** Where events that fail validation go, with the reason (invariant 10, docs/ARCHITECTURE.md). */
export interface DeadLetters {
  send(letter: { reason: string; issues: { path: string; message: string }[]; event: unknown }): Promise<void>;
}

export type IntakeOutcome = { accepted: true; runId: string } | { accepted: false; reason: string };
