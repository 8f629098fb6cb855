/**
 * Intake: one code path for the HTTP API and for EventBridge events. Validate, create the run
 * record, start the orchestrator; bad input is refused whole (invariant 10, docs/ARCHITECTURE.md).
 */
import { createHash } from 'node:crypto';
import { builtinWorkflows, placeOf, refOf, sortedKeys, versionOf } from '../definitions/definition.js';
import type { AgentDefinition, Definitions } from '../definitions/types.js';
import type { AgentDefinitionStore, AgentRef } from '../agents/types.js';
import { layer, layeredPolicy } from '../approvals/policy.js';
import { type Budget, BudgetExceeded } from '../budgets/types.js';
import { dailyBudgetSpent, dayOf, runBudget } from '../budgets/limits.js';
import { Owner, TooManyRuns } from '../callers/types.js';
import { ownerKey, owns } from '../callers/access.js';
import { conversationIdOf } from '../conversation/conversation.js';
import { StepwiseError, messageOf } from '../errors/errors.js';
import type { ErrorName } from '../errors/table.js';
import { zeroUsage } from '../model/messages.js';
import { descendantsOf } from '../runs/descendants.js';
import { memoryPrefix } from '../memory/scope.js';
import type { Run } from '../runs/types.js';
import { newRunTrace } from '../traces/context.js';
import { answeringAgent, builtinCatalog, type CreateRunBody, targetOf } from './request.js';
import { type CreateRunOptions, defaultMaxIterations, IdempotencyConflict, type IntakeDeps, RunIdTaken, SessionBusy } from './types.js';

/**
 * Cancels a running run: marks it cancelled, stops its executions, then announces it. `false`
 * when it was not running.
 */
export async function cancelRun(runId: string, deps: Pick<IntakeDeps, 'runs' | 'starter'>): Promise<boolean> {
  // Repeatable: a cancel whose stop or announcement failed can be sent again and completes then.
  if (!(await deps.runs.cancel(runId)) && (await deps.runs.get(runId))?.status !== 'cancelled') return false;
  // A stop that fails still leaves the run cancelled: its next step sees the record and calls the
  // model no more, so its children are cancelled and the cancel announced (once, by its execution's
  // name) all the same; then the failure is reported, and the cancel may be sent again.
  const stopped = await deps.starter.stop(runId, 'Cancelled on request.').then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  // Stopping the run stopped its child runs' nested executions too: their records say so.
  const run = await deps.runs.get(runId);
  if (run) for await (const child of descendantsOf(run, deps.runs)) await deps.runs.cancel(child.runId);
  await deps.starter.announceCancelled(runId);
  if (stopped) throw stopped.error;
  return true;
}

/** The lock of an owner's session: session ids are per owner, so another caller's is another lock. */
export function sessionLockId(owner: Owner, sessionId: string): string {
  return `${ownerKey(owner)}/${sessionId}`;
}

/**
 * The hash of a validated body: key order (at any depth) and defaults do not change it; nested
 * values (a budget, a schema) do. `mode` is hashed as what it names (`{ mode: "single" }` and
 * `{ agent: "assistant" }` are one request).
 */
export function bodyHash(body: CreateRunBody): string {
  const { mode: _mode, agent: _agent, workflow: _workflow, maxIterations, ...rest } = body;
  const target = targetOf(body);
  const normalized = { ...rest, [target.kind]: target.name, ...(maxIterations === undefined || maxIterations === defaultMaxIterations ? {} : { maxIterations }) };
  return createHash('sha256').update(JSON.stringify(sortedKeys(normalized))).digest('hex');
}

/** What a run follows: its mode, its agents by place, and the agent or workflow it names. */
export interface RunPlan {
  mode: Run['mode'];
  /** The agent of a one-agent run; the first of a workflow's. */
  agent: AgentDefinition;
  /** Each agent with its place and, in a workflow, its step. */
  agents: { place: string; definition: AgentDefinition; step?: number }[];
  ref: { agent: AgentRef } | { workflow: { name: string; version: string } };
  /** A team's workflow's steps, as the orchestrator runs them (`plan-and-build` has states of its own). */
  steps?: { agent: string; label: string }[][];
  /** The agents the run's agents may call as tools, and those these may call, at today's versions. */
  callees: AgentDefinition[];
}

/** The agents `agents` may call (`agent:<name>` in their tools), and the agents those may call, each once. */
function reachableAgents(agents: readonly AgentDefinition[], catalog: Definitions): AgentDefinition[] {
  const found = new Map<string, AgentDefinition>();
  const visit = (definition: AgentDefinition) => {
    for (const entry of definition.tools.filter((tool) => tool.startsWith('agent:'))) {
      const callee = catalog.agent(entry.slice('agent:'.length));
      if (!callee || found.has(callee.name)) continue;
      found.set(callee.name, callee);
      visit(callee);
    }
  };
  agents.forEach(visit);
  return [...found.values()];
}

/** The agents a request runs, from the deployment's catalog (names were checked with the body). */
export function runPlanOf(body: Pick<CreateRunBody, 'mode' | 'agent' | 'workflow'>, catalog: Definitions = builtinCatalog): RunPlan {
  const target = targetOf(body);
  if (target.kind === 'agent') {
    const agent = catalog.agent(target.name);
    if (!agent) throw new Error(`No agent ${target.name}.`);
    return { mode: 'single', agent, agents: [{ place: placeOf(agent.name), definition: agent }], ref: { agent: refOf(agent) }, callees: reachableAgents([agent], catalog) };
  }
  const workflow = catalog.workflow(target.name);
  if (!workflow) throw new Error(`No workflow ${target.name}.`);
  const agents = workflow.steps.flatMap((step, index) =>
    (typeof step === 'string' ? [step] : step.parallel).map((name) => {
      const definition = catalog.agent(name);
      if (!definition) throw new Error(`No agent ${name}.`);
      return { place: placeOf(name), definition, step: index };
    }),
  );
  const [first] = agents;
  if (!first) throw new Error(`Workflow ${workflow.name} has no steps.`);
  const steps = workflow.steps.map((_, index) => agents.filter((a) => a.step === index).map((a) => ({ agent: a.place, label: labelOf(a.place) })));
  return {
    mode: 'multi',
    agent: first.definition,
    agents,
    ref: { workflow: { name: workflow.name, version: versionOf(workflow) } },
    callees: reachableAgents(agents.map((a) => a.definition), catalog),
    ...(builtinWorkflows.some((w) => w.name === workflow.name) ? {} : { steps }),
  };
}

/** The short name of an agent in its executions' names (`<runId>-<label>-<iteration>`, at most 80 characters). */
export function labelOf(place: string): string {
  return place.length <= 16 ? place : `${place.slice(0, 7)}-${createHash('sha256').update(place).digest('hex').slice(0, 8)}`;
}

/** Versions this warm function has stored (the same version is the same content, so once is enough). */
const storedVersions = new WeakMap<AgentDefinitionStore, Set<string>>();

async function storeDefinitions(store: AgentDefinitionStore | undefined, agents: RunPlan['agents']): Promise<void> {
  if (!store) return;
  let stored = storedVersions.get(store);
  if (!stored) storedVersions.set(store, (stored = new Set()));
  const known = stored;
  await Promise.all(
    agents.map(async ({ definition }) => {
      const ref = refOf(definition);
      const key = `${ref.name}@${ref.version}`;
      if (known.has(key)) return;
      await store.put(ref, definition);
      known.add(key);
    }),
  );
}

/** The stricter of two budgets, field by field. */
export function stricter(a: Budget | undefined, b: Budget | undefined): Budget | undefined {
  if (!a || !b) return a ?? b;
  const min = (x?: number, y?: number) => (x === undefined ? y : y === undefined ? x : Math.min(x, y));
  const maxUsd = min(a.maxUsd, b.maxUsd);
  const maxTokens = min(a.maxTokens, b.maxTokens);
  return { ...(maxUsd !== undefined ? { maxUsd } : {}), ...(maxTokens !== undefined ? { maxTokens } : {}) };
}

/**
 * Creates and starts a run from a validated body; returns what `POST /runs` answers. Repeats
 * (the same idempotency key and body, or the same client run id) return the first run and start
 * nothing new. A session that another running run holds is refused before anything is written.
 */
export async function createRun(
  body: CreateRunBody,
  deps: IntakeDeps,
  options: CreateRunOptions,
): Promise<Pick<Run, 'runId' | 'status' | 'phase'>> {
  const clock = deps.clock ?? (() => new Date());
  const hash = options.fork?.requestHash ?? bodyHash(body);
  const owner = Owner.parse({ principal: options.caller.principal, tenant: options.caller.tenant });
  // Idempotency keys and sessions are per owner: another caller's key or session id names another record.
  const idempotencyKey = options.idempotencyKey && `${ownerKey(owner)}:${options.idempotencyKey}`;
  let runId = options.runId ?? deps.newId();
  // Only an id the caller gave, or an earlier request's, can name a run already made: one just
  // generated names none, and is not looked for.
  let named = options.runId !== undefined;
  if (idempotencyKey && deps.idempotency) {
    const earlier = await deps.idempotency.get(idempotencyKey, clock());
    if (earlier && earlier.bodyHash !== hash) {
      throw new IdempotencyConflict('This Idempotency-Key was used with a different request body.');
    }
    if (earlier) {
      runId = earlier.runId;
      named = true;
    }
  }
  const plan = runPlanOf(body, deps.agents);
  // The request's memory, else the first of its agents' definitions that has one; a scope the caller cannot have is refused before anything is written.
  const memory = body.memory ?? plan.agents.find((a) => a.definition.memory)?.definition.memory;
  if (memory) memoryPrefix(memory.scope, owner, body.sessionId);
  const place = placeOf(plan.agent.name);
  // Each agent's limit: the request's, the agent's own, or the default; the lower when both are set.
  const limitOf = (definition?: AgentDefinition) => Math.min(body.maxIterations ?? definition?.maxIterations ?? defaultMaxIterations, definition?.maxIterations ?? Infinity);
  const maxIterations = limitOf(plan.mode === 'single' ? plan.agent : undefined);
  const steps = plan.steps?.map((step) => step.map((at) => ({ ...at, maxIterations: limitOf(plan.agents.find((a) => a.place === at.agent)?.definition) })));
  const start = () =>
    deps.starter.start({
      runId,
      mode: plan.mode,
      agent: place,
      label: labelOf(place),
      conversationId: conversationIdOf(runId, place, body.sessionId, owner),
      maxIterations,
      model: body.model ?? '',
      ...(steps ? { steps } : {}),
    });
  const existing = named ? await deps.runs.get(runId) : undefined;
  // A run id another caller chose first is not this caller's to repeat, nor to learn about: the
  // answer is the one every route gives for a run the caller may not see (404 RunNotFound).
  if (existing && !owns(owner, existing.owner)) throw new RunIdTaken(`No run ${runId}.`);
  if (existing) {
    // A repeat. If the first request stopped between creating and starting, start it now.
    if (existing.status === 'running' && existing.phase === 'idle') await start();
    return { runId, status: existing.status, phase: existing.phase };
  }

  await refuseWhenDailySpent(owner, clock(), deps);
  if (idempotencyKey && deps.idempotency) {
    // Two first requests racing: the claim that stands names the run both answer with.
    const claim = await deps.idempotency.claim(idempotencyKey, { runId, bodyHash: hash }, clock());
    if (claim.bodyHash !== hash) throw new IdempotencyConflict('This Idempotency-Key was used with a different request body.');
    runId = claim.runId;
  }
  const isRunning = (id: string) => stillRunning(id, deps, clock());
  // The quota is a slot taken with a conditional write for the run id that stands, never a count
  // then a write: parallel requests cannot all pass it.
  const slotted = deps.maxRunningRuns !== undefined;
  if (deps.maxRunningRuns !== undefined) {
    if (!deps.slots) throw new Error('Stepwise is misconfigured: a running-runs limit needs its slots.');
    if (!(await deps.slots.take(owner, runId, deps.maxRunningRuns, isRunning))) {
      throw new TooManyRuns(`You have ${deps.maxRunningRuns} runs running, the most this deployment allows; wait for one to end or cancel one.`);
    }
  }
  try {
    // The session is locked for the run id that stands, before its record exists.
    if (body.sessionId && deps.sessions) {
      const holder = await deps.sessions.acquire(sessionLockId(owner, body.sessionId), runId, isRunning);
      if (holder !== runId) throw new SessionBusy(`Session ${body.sessionId} is in use by run ${holder}, which is still running.`);
    }
    // A fork's history and files, and a request's files, are in place before its record exists, so no step ever sees a partial copy.
    if (options.fork) await options.fork.copy(runId);
    if (body.files) await seedFiles(runId, body.files, deps);
  } catch (error) {
    // Refused before its record exists: the slot goes back at once, not after the grace period.
    if (slotted && !(await deps.runs.get(runId))) await deps.slots?.release(owner, runId);
    throw error;
  }
  const now = clock().toISOString();
  // The agents' own gates, rules and budgets apply with the deployment's and the run's: the stricter wins.
  // Each source's gates and rules stay a layer of their own, so a rule approves only what its own source gated (DESIGN §16).
  const definitions = plan.agents.map((a) => a.definition);
  const approvals = layeredPolicy([
    layer('deployment', { tools: [...(deps.approvalTools ?? [])] }),
    ...definitions.map((d) => layer(`agent:${d.name}`, d.approvals)),
    layer('run', body.approvals),
  ]);
  const budget = definitions.reduce((b, d) => stricter(b, d.budget), runBudget(body.budget, deps.budgets));
  // The answering agent's own schema (a one-agent run's agent, a workflow's last), else the request's:
  // the agent the body's check names (request.ts), so the two never disagree.
  const output = answeringAgent(targetOf(body), deps.agents)?.output ?? body.output;
  await storeDefinitions(deps.agentStore, [...plan.agents, ...plan.callees.map((definition) => ({ place: definition.name, definition }))]);
  const run: Run = {
    runId,
    mode: plan.mode,
    goal: body.goal,
    owner,
    ...plan.ref,
    agents: [
      ...plan.agents.map(({ place: at, definition, step }) => ({ place: at, ...refOf(definition), ...(step !== undefined ? { step } : {}) })),
      ...plan.callees.map((definition) => ({ place: placeOf(definition.name), ...refOf(definition), callee: true as const })),
    ],
    ...(body.sessionId ? { sessionId: body.sessionId } : {}),
    ...(body.model ? { model: body.model } : {}),
    ...(approvals ? { approvals } : {}),
    ...(options.fork ? { forkedFrom: options.fork.from } : {}),
    ...(options.scheduleId ? { scheduleId: options.scheduleId } : {}),
    ...(budget ? { budget } : {}),
    ...(output ? { output } : {}),
    ...(deps.tracing ? { trace: newRunTrace(options.traceparent) } : {}),
    ...(memory ? { memory } : {}),
    status: 'running',
    phase: 'idle',
    iterations: {},
    usage: zeroUsage,
    createdAt: now,
    updatedAt: now,
  };
  const created = await deps.runs.create(run);
  if (created) deps.onCreated?.(run);
  const stored = created ? run : await deps.runs.get(runId);
  if (!stored) throw new Error(`Run ${runId} could not be created.`);
  try {
    await start();
  } catch (error) {
    // A transient fault leaves the run waiting to start: a repeat of the request starts it.
    if (!(error instanceof StepwiseError && error.transient)) {
      await deps.runs.finish(runId, {
        status: 'failed',
        phase: 'failed',
        error: { code: 'StartFailed' satisfies ErrorName, message: `The run could not be started: ${messageOf(error)}` },
      });
    }
    throw error;
  }
  return { runId, status: stored.status, phase: stored.phase };
}

/**
 * How long a run may stay `idle` before the intake takes it for one whose start failed and was
 * never retried: its orchestrator marks the phase within seconds of starting, and a repeat of the
 * request (which starts it) comes sooner than this.
 */
export const startGraceSeconds = 10 * 60;

/**
 * Whether a run that holds a quota slot or a session lock still runs (`undefined`: no record yet,
 * its intake under way). A run left `idle` past the grace period never started: it is marked
 * failed (`StartFailed`) here, so it neither counts against the quota nor holds its session forever.
 */
export async function stillRunning(runId: string, deps: Pick<IntakeDeps, 'runs'>, now: Date): Promise<boolean | undefined> {
  const run = await deps.runs.get(runId);
  if (!run) return undefined;
  if (run.status !== 'running') return false;
  if (run.phase !== 'idle' || Date.parse(run.createdAt) > now.getTime() - startGraceSeconds * 1000) return true;
  await deps.runs.failIfRunning(runId, {
    code: 'StartFailed' satisfies ErrorName,
    message: `The run never started: it was still waiting to start ${startGraceSeconds / 60} minutes after it was created.`,
  });
  return false;
}

/** Writes a request's files into the run's workspace (validated with the body: paths, count and size). */
async function seedFiles(runId: string, files: Record<string, string>, deps: Pick<IntakeDeps, 'workspaceFor'>): Promise<void> {
  const entries = Object.entries(files);
  if (!entries.length) return;
  if (!deps.workspaceFor) throw new Error('Stepwise is misconfigured: a request with files needs the run\'s workspace.');
  const workspace = deps.workspaceFor(runId);
  const encoder = new TextEncoder();
  await Promise.all(entries.map(([path, text]) => workspace.write(path, encoder.encode(text))));
}

/** Refuses a new run once the caller's runs of today have spent its daily budget (429 `BudgetExceeded`). */
async function refuseWhenDailySpent(owner: Owner, now: Date, deps: Pick<IntakeDeps, 'budgets' | 'spend'>): Promise<void> {
  const limit = deps.budgets?.dailyMaxUsd;
  if (limit === undefined || !deps.spend) return;
  const day = dayOf(now);
  const spent = dailyBudgetSpent(await deps.spend.spentOn(owner, day), limit, day);
  if (spent) throw new BudgetExceeded(`${spent} Runs can start again tomorrow (UTC).`);
}
