/**
 * The run record: what `GET /runs/{runId}` shows, and the port that keeps it.
 */
import * as z from 'zod';
import { ApprovalPolicy } from './approvals.js';
import { AgentName } from './names.js';
import { Usage } from './messages.js';
import { Plan } from './plan.js';

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

export const RunResult = z.object({ response: z.string(), actionsTaken: z.array(z.string()) });
export type RunResult = z.infer<typeof RunResult>;

export const Run = z.object({
  runId: z.string(),
  mode: RunMode,
  goal: z.string(),
  sessionId: z.string().optional(),
  model: z.string().optional(),
  /** The tools whose calls wait for a reviewer in this run (the deployment's and the request's). */
  approvals: ApprovalPolicy.optional(),
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
   * The model cost so far in USD, from Claude's list prices (`core/prices.ts`); calls to a model
   * without a known price add nothing.
   */
  estimatedCostUsd: z.number().nonnegative().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Run = z.infer<typeof Run>;

/** What one inference step adds to its run. */
export interface StepOutcome {
  usage: Usage;
  /** The step's estimated model cost in USD, when the model's price is known. */
  costUsd?: number;
  /** The run's result, when this step finished the agent that answers the run. */
  result?: RunResult;
}

/** Durable run records. */
export interface RunStore {
  get(runId: string): Promise<Run | undefined>;
  /** Creates the record unless a run with that id exists; `false` when it did. */
  create(run: Run): Promise<boolean>;
  /**
   * Adds one inference step's usage, cost and iteration count, once per (agent, iteration)
   * however often it is called, so a retried step is not counted twice.
   */
  recordStep(runId: string, agent: AgentName, iteration: number, outcome: StepOutcome): Promise<void>;
  /** Stores the Architect's plan on the run. */
  savePlan(runId: string, plan: Plan): Promise<void>;
  /** Marks a running run cancelled; `false` when it was not running. */
  cancel(runId: string): Promise<boolean>;
  /** Marks the run finished. */
  finish(runId: string, outcome: Pick<Run, 'status' | 'phase'> & Partial<Pick<Run, 'result' | 'error'>>): Promise<void>;
}
