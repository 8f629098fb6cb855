/**
 * Intake: one code path for the HTTP API and for EventBridge events. Validate, create the run
 * record, start the orchestrator; bad input is refused whole (DESIGN invariant 10).
 */
import { z } from 'zod';
import { conversationIdOf } from './conversation.js';
import { messageOf } from './errors.js';
import { zeroUsage } from './messages.js';
import type { Run, RunStore } from './runs.js';

export const maxGoalChars = 100_000;
export const defaultMaxIterations = 25;

export const CreateRunBody = z
  .object({
    goal: z.string().trim().min(1, 'must not be empty').max(maxGoalChars, `must be at most ${maxGoalChars} characters`),
    mode: z.enum(['single', 'multi']).default('multi'),
    sessionId: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_" or "-"')
      .optional(),
    maxIterations: z.number().int().min(1).max(200).default(defaultMaxIterations),
    model: z.string().min(1).max(200).optional(),
  })
  .strict()
  .refine((body) => !(body.sessionId && body.mode === 'multi'), {
    path: ['sessionId'],
    message: 'sessions continue single-mode conversations; use mode "single" with a sessionId',
  });
export type CreateRunBody = z.infer<typeof CreateRunBody>;

/** What the orchestrator is started with: ids and limits only. */
export interface OrchestratorInput {
  runId: string;
  mode: Run['mode'];
  conversationId: string;
  maxIterations: number;
}

/** Starts and stops a run's orchestrator; starting the same run twice starts it once. */
export interface RunStarter {
  start(input: OrchestratorInput): Promise<void>;
  /** Stops the run's executions, nested ones included. */
  stop(runId: string, reason: string): Promise<void>;
}

/** Cancels a running run: marks it cancelled, then stops its executions. `false` when it was not running. */
export async function cancelRun(runId: string, deps: Pick<IntakeDeps, 'runs' | 'starter'>): Promise<boolean> {
  if (!(await deps.runs.cancel(runId))) return false;
  await deps.starter.stop(runId, 'Cancelled on request.');
  return true;
}

export interface IntakeDeps {
  runs: RunStore;
  starter: RunStarter;
  newId: () => string;
  clock?: () => Date;
}

/** Creates and starts a run from a validated body; returns what `POST /runs` answers. */
export async function createRun(body: CreateRunBody, deps: IntakeDeps, runId = deps.newId()): Promise<Pick<Run, 'runId' | 'status' | 'phase'>> {
  const now = (deps.clock ?? (() => new Date()))().toISOString();
  const run: Run = {
    runId,
    mode: body.mode,
    goal: body.goal,
    ...(body.sessionId ? { sessionId: body.sessionId } : {}),
    ...(body.model ? { model: body.model } : {}),
    status: 'running',
    phase: 'idle',
    iterations: {},
    usage: zeroUsage,
    createdAt: now,
    updatedAt: now,
  };
  const created = await deps.runs.create(run);
  const existing = created ? run : await deps.runs.get(runId);
  if (!existing) throw new Error(`Run ${runId} could not be created.`);
  try {
    await deps.starter.start({
      runId,
      mode: run.mode,
      conversationId: conversationIdOf(runId, 'single', body.sessionId),
      maxIterations: body.maxIterations,
    });
  } catch (error) {
    await deps.runs.finish(runId, {
      status: 'failed',
      phase: 'failed',
      error: { code: 'StartFailed', message: `The run could not be started: ${messageOf(error)}` },
    });
    throw error;
  }
  return { runId, status: existing.status, phase: existing.phase };
}
