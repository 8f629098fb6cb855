/**
 * The steps' inputs, results and dependencies: what the state machine passes between states is
 * ids and a few numbers (invariant 1, docs/ARCHITECTURE.md).
 */
import * as z from 'zod';
import { named } from '../errors/errors.js';
import { StopReason } from '../model/messages.js';
import { AgentName } from '../agents/types.js';

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
   * Where this execution of the loop hands over to a fresh one (continue-as-new: docs/ARCHITECTURE.md, "The agent loop"): a step at it
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
  /** The call runs an agent: the child run the step made, which the loop runs as a nested execution before its tool step. */
  child: z
    .object({
      /** The nested execution's name. */
      name: z.string(),
      runId: z.string(),
      agent: z.string(),
      label: z.string(),
      conversationId: z.string(),
      maxIterations: z.number().int().positive(),
      model: z.string(),
    })
    .optional(),
});

/** What the agent loop starts for a call of an agent. */
export type ChildStart = NonNullable<z.infer<typeof ToolCallRef>['child']>;

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
  /** Whether any of `toolCalls` runs an agent: the loop runs such a turn's calls through its gate, where child runs start. */
  callsAgents: z.literal(true).optional(),
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

/** The agent reached its iteration limit without finishing (invariant 9): the loop's `Catch` fails the run with it. */
export class MaxIterationsExceeded extends named('MaxIterationsExceeded') {}

/** The model declined to go on (stop reason `refusal`): the run fails, running none of that turn's tools. */
export class ModelRefused extends named('ModelRefused') {}
