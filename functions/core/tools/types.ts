/**
 * Tools: a name, a description, a zod input schema and a `run`; what a tool may use while it runs.
 */
import type * as z from 'zod';
import type { ToolResultBlock, ToolUseBlock, Usage } from '../model/messages.js';
import type { ToolSpec } from '../model/types.js';
import type { Plan } from '../plan/types.js';
import type { Workspace } from '../workspace/types.js';
import type { RunMemory } from '../memory/types.js';

/** Where the Architect's plan is kept. */
export interface PlanStore {
  savePlan(runId: string, plan: Plan): Promise<void>;
}

/** What a tool may use while it runs. */
export interface ToolContext {
  runId: string;
  /** The call being run: the same on every retry of its step, so a tool can recognize its own earlier write. */
  toolUseId?: string;
  workspace: Workspace;
  limits: ToolLimits;
  plans?: PlanStore;
  /** Child runs, for the tools that call agents (the run store in practice). */
  children?: ChildRuns;
  /** The run's long-term memory, for the memory tool; absent when the run has none. */
  memory?: RunMemory;
}

/** A child run as the tool that called its agent reads it (`Run` of runs/types.ts, in brief). */
export interface ChildRunView {
  runId: string;
  status: 'running' | 'succeeded' | 'failed' | 'cancelled';
  result?: { response: string; output?: Record<string, unknown> | undefined } | undefined;
  error?: { code: string; message: string } | undefined;
  usage: Usage;
  estimatedCostUsd?: number | undefined;
  depth?: number | undefined;
}

/** What a tool that calls an agent does with child runs: read one, end it, add its spend to its parent's. */
export interface ChildRuns {
  get(runId: string): Promise<ChildRunView | undefined>;
  finish(
    runId: string,
    outcome: { status: 'succeeded' | 'failed'; phase: 'complete' | 'failed'; error?: { code: string; message: string } },
    options: { ifRunning: boolean },
  ): Promise<boolean | void>;
  rollUp(runId: string, toolUseId: string, spent: { usage: Usage; estimatedCostUsd: number }): Promise<unknown>;
}

export interface ToolLimits {
  /** Largest file a tool may write or read whole, in bytes. */
  maxFileBytes: number;
  /** Most entries `list_files` returns. */
  maxListEntries: number;
}

/** A failure the model caused and can correct; becomes an `is_error` result with this message. */
export class ToolFailure extends Error {
  override readonly name = 'ToolFailure';
}

export interface Tool<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  input: Schema;
  run(input: z.infer<Schema>, ctx: ToolContext): Promise<string>;
}

/** An agent's tools, as the steps use them (`ToolRegistry` is the implementation). */
export interface Tools {
  readonly names: string[];
  get(name: string): Tool | undefined;
  /** The tools for the model, in a stable order (so the prompt cache hits). */
  specs(): ToolSpec[];
  /** Runs one call; always answers with a result, saying whether the tool ran (invariant 5). */
  attempt(call: ToolUseBlock, ctx: ToolContext, alsoAvailable?: readonly string[]): Promise<{ result: ToolResultBlock; ran: boolean }>;
}
