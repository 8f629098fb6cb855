/**
 * Agents that call agents (DESIGN §12; docs/agents.md, "Agents as tools"): `agent:<name>` in an
 * agent's tools offers the model a tool named after that agent. A call starts a child run of it,
 * owned by the same caller, as a nested execution of the agent loop, so the parent's tool Map waits
 * without a polling Lambda:
 *
 *   the inference step makes the child run (`feature.ts`) ─> the agent loop, nested
 *   (startExecution.sync:2) ─[failed]─> child-failed (tool function) ─> the tool step, whose
 *   agent tool reads the child's outcome
 *
 * The child follows the callee's version the root run recorded; its budget is the parent's
 * remaining one (and the callee's own, the stricter), and its spend is added to the parent's when
 * the tool step reads its outcome. Calls nest at most `maxAgentDepth` deep.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { definitionFor } from '../agents/read.js';
import type { AgentDefinitionStore, AgentRef } from '../agents/types.js';
import { layer, layeredPolicy, layersOf } from '../approvals/policy.js';
import { tokensOf } from '../budgets/limits.js';
import type { Budget } from '../budgets/types.js';
import { agentToolName, placeOf } from '../definitions/definition.js';
import { NotFound, messageOf } from '../errors/errors.js';
import type { ErrorName } from '../errors/table.js';
import { defaultMaxIterations, maxGoalChars } from '../intake/types.js';
import { labelOf, stricter } from '../intake/create.js';
import { type ToolUseBlock, zeroUsage } from '../model/messages.js';
import type { Run, RunStore } from '../runs/types.js';
import type { ChildStart, ToolInput } from '../steps/types.js';
import { describeIssues } from '../tools/registry.js';
import { childRunTrace } from '../traces/context.js';
import { type ChildRuns, type Tool, type ToolContext, ToolFailure } from '../tools/types.js';

/** How deep agents may call agents: a run at this depth may not start a child. */
export const maxAgentDepth = 3;

/** What the model gives an agent it calls. */
export const AgentCallInput = z.strictObject({
  goal: z.string().trim().min(1).max(maxGoalChars).describe('What the agent is to do, as you would ask a colleague.'),
  context: z.string().max(maxGoalChars).optional().describe('Anything it needs to know that the goal does not say.'),
});

/** The id of the child run a call starts: the same for every attempt of the call, a UUID in form. */
export function childRunIdOf(parentRunId: string, toolUseId: string): string {
  const hex = createHash('sha256').update(`${parentRunId}/${toolUseId}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The run's callees: the agents its agents may call, at the versions it recorded. */
export function calleesOf(run: Pick<Run, 'agents'> | undefined): AgentRef[] {
  return (run?.agents ?? []).filter((agent) => agent.callee).map(({ name, version }) => ({ name, version }));
}

/** What a child run reads of the run store. */
export type ChildRunStore = Pick<RunStore, 'get' | 'create' | 'addChild' | 'failIfRunning' | 'finish' | 'rollUp'>;

/** The tools that call agents read child runs through the tool context. */
export type { ChildRuns };

/** The tool the model calls to run an agent; it runs after the child did, and answers with the child's outcome. */
export function agentTool(callee: AgentRef & { description: string }): Tool<typeof AgentCallInput> {
  return {
    name: agentToolName(callee.name),
    description: `${callee.description}\n\nRuns the agent "${callee.name}" on the goal you give it and answers with its result.`,
    input: AgentCallInput,
    run: (_input, ctx) => collect(ctx),
  };
}

export interface ChildDeps {
  runs: ChildRunStore;
  agentStore?: AgentDefinitionStore | undefined;
  clock?: (() => Date) | undefined;
}

/** What is left of a budget after `run` spent some; undefined when the run has no budget. */
function remaining(run: Run): Budget | undefined {
  const budget = run.budget;
  if (!budget) return undefined;
  const tokens = tokensOf(run.usage);
  return {
    ...(budget.maxUsd !== undefined ? { maxUsd: Math.max(budget.maxUsd - (run.estimatedCostUsd ?? 0), 0.000001) } : {}),
    ...(budget.maxTokens !== undefined ? { maxTokens: Math.max(budget.maxTokens - tokens, 1) } : {}),
  };
}

/** Why a call of an agent starts no child run, as the model reads it; undefined when it may. */
function refusal(parent: Run, callee: AgentRef | undefined, input: unknown): string | undefined {
  if (!callee) return 'This run may not call that agent.';
  const parsed = AgentCallInput.safeParse(input);
  // As the tool registry words a tool's invalid input.
  if (!parsed.success) return `Invalid input for ${agentToolName(callee.name)}: ${describeIssues(parsed.error)}`;
  const depth = (parent.depth ?? 0) + 1;
  if (depth > maxAgentDepth) return `Agents call agents at most ${maxAgentDepth} deep; this call would be ${depth} deep. Do the work yourself.`;
  if (parent.status !== 'running') return 'This run has ended.';
  return undefined;
}

/**
 * Makes the child run of a call of an agent (once, however often it is asked: its id is the
 * call's) and says what the agent loop starts; or why it starts nothing (a tool error the step
 * answers the call with).
 */
export async function startChild(parentRunId: string, call: ToolUseBlock, deps: ChildDeps): Promise<{ child: ChildStart } | { refused: string }> {
  const parent = await deps.runs.get(parentRunId);
  if (!parent) throw new NotFound(`Run ${parentRunId} does not exist.`);
  const ref = calleesOf(parent).find((callee) => agentToolName(callee.name) === call.name);
  const refused = refusal(parent, ref, call.input);
  if (refused || !ref) return { refused: refused ?? 'This run may not call that agent.' };
  const { goal, context } = AgentCallInput.parse(call.input);

  const definition = await definitionFor(ref, deps.agentStore);
  const place = placeOf(ref.name);
  const runId = childRunIdOf(parent.runId, call.id);
  const now = (deps.clock?.() ?? new Date()).toISOString();
  const budget = stricter(remaining(parent), definition.budget);
  // The layers the parent carries (the deployment's among them), and the callee's own policy as a
  // layer of its own: a definition's gates and rules hold wherever its agent runs, as a tool too,
  // and approve only what it gates itself (DESIGN §16).
  const approvals = layeredPolicy([...(parent.approvals ? layersOf(parent.approvals) : []), layer(`agent:${definition.name}`, definition.approvals)]);
  await deps.runs.create({
    runId,
    mode: 'single',
    goal: context ? `${goal}\n\nContext:\n${context}` : goal,
    ...(parent.owner ? { owner: parent.owner } : {}),
    agent: ref,
    // The child calls agents at the versions the root run recorded.
    agents: [{ place, ...ref }, ...(parent.agents ?? []).filter((agent) => agent.callee)],
    parentRunId: parent.runId,
    depth: (parent.depth ?? 0) + 1,
    // One trace with its parent: the child's spans hang under the parent's span of the call.
    ...(parent.trace ? { trace: childRunTrace(parent.trace, parent.runId, call.id, runId) } : {}),
    // Its goal is the parent's model output: a parent that read untrusted content passes it on.
    ...(parent.untrustedContent ? { untrustedContent: true as const } : {}),
    ...(approvals ? { approvals } : {}),
    ...(budget ? { budget } : {}),
    ...(definition.output ? { output: definition.output } : {}),
    status: 'running',
    phase: 'executing',
    currentAgent: place,
    iterations: {},
    usage: zeroUsage,
    createdAt: now,
    updatedAt: now,
  });
  await deps.runs.addChild(parent.runId, call.id, { runId, agent: place });
  const label = labelOf(place);
  return {
    child: { name: `${runId}-${label}`, runId, agent: place, label, conversationId: `run/${runId}/${place}`, maxIterations: definition.maxIterations ?? defaultMaxIterations, model: '' },
  };
}

/** The nested execution of a child failed: the child run is marked failed with its error (once). */
export async function childFailed(input: ToolInput, failure: { Error?: string; Cause?: string }, deps: Pick<ChildDeps, 'runs'>): Promise<void> {
  const runId = childRunIdOf(input.runId, input.toolUseId);
  const child = await deps.runs.get(runId);
  if (!child) return;
  // The nested execution's failure carries the child's own error and cause as JSON.
  let error = { code: failure.Error ?? 'ExecutionFailed', message: failure.Cause ?? 'The agent loop failed.' };
  try {
    const parsed = JSON.parse(failure.Cause ?? '') as { Error?: unknown; Cause?: unknown };
    if (typeof parsed.Error === 'string') error = { code: parsed.Error, message: typeof parsed.Cause === 'string' ? parsed.Cause : 'The agent loop stopped without a cause.' };
  } catch {
    // Not JSON: the failure is the nested execution's own, as it is.
  }
  await deps.runs.failIfRunning(runId, { ...error, ...(child.currentAgent ? { agent: child.currentAgent } : {}) });
}

/** The tool step of a call of an agent: the child's outcome, its spend added to the parent's once. */
async function collect(ctx: ToolContext): Promise<string> {
  const runs = ctx.children;
  if (!runs || !ctx.toolUseId) throw new Error('This tool step cannot read child runs.');
  const child = await runs.get(childRunIdOf(ctx.runId, ctx.toolUseId));
  if (!child) {
    const parent = await runs.get(ctx.runId);
    const depth = (parent?.depth ?? 0) + 1;
    if (depth > maxAgentDepth) throw new ToolFailure(`agents call agents at most ${maxAgentDepth} deep; this call would be ${depth} deep. Do the work yourself.`);
    throw new ToolFailure('the agent was not started: this run has ended or may not call it.');
  }
  let outcome = child;
  if (child.status === 'running') {
    // The nested execution ended: the child succeeded if its agent answered.
    const ended = child.result ? { status: 'succeeded' as const, phase: 'complete' as const } : { status: 'failed' as const, phase: 'failed' as const, error: { code: 'NoAnswer' satisfies ErrorName, message: 'The agent ended without an answer.' } };
    await runs.finish(child.runId, ended, { ifRunning: true });
    outcome = (await runs.get(child.runId)) ?? child;
  }
  await runs.rollUp(ctx.runId, ctx.toolUseId, { usage: outcome.usage, estimatedCostUsd: outcome.estimatedCostUsd ?? 0 });
  if (outcome.status === 'succeeded' && outcome.result) {
    return outcome.result.output ? JSON.stringify(outcome.result.output) : outcome.result.response;
  }
  if (outcome.status === 'cancelled') throw new ToolFailure(`the child run ${outcome.runId} was cancelled.`);
  throw new ToolFailure(`the child run ${outcome.runId} failed (${outcome.error?.code ?? 'unknown'}): ${outcome.error?.message ?? messageOf(outcome.error)}`);
}
