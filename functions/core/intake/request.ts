/**
 * What a run request may say: the body of `POST /runs` and the detail of a `Stepwise Run
 * Requested` event, with the deployment's models and tools applied.
 */
import * as z from 'zod';
import { AgentCatalog } from '../definitions/catalog.js';
import { versionOf, workflowOnlyAgents } from '../definitions/definition.js';
import type { AgentDefinition, Definitions } from '../definitions/types.js';
import { approvalPolicy } from '../approvals/policy.js';
import { Budget } from '../budgets/types.js';
import { Owner } from '../callers/types.js';
import { OutputRequest } from '../output/answer.js';
import { ScheduleId } from '../schedules/types.js';
import { MemorySettings } from '../memory/types.js';
import { noExternalTools } from '../tools/external/names.js';
import { checkPath } from '../workspace/paths.js';
import { defaultMaxIterations, maxGoalChars, maxSeedFiles, maxSeedBytes, type RunRequestRules } from './types.js';

const modelId = z.string().min(1).max(200);

/** `model`, limited to the models a deployment allows when it names them. */
function modelField(allowed?: readonly string[]) {
  if (!allowed) return modelId.optional();
  return modelId
    .refine((model) => allowed.includes(model), { message: `must be one of the models this deployment allows: ${allowed.join(', ')}` })
    .optional();
}

/** The built-in agents and workflow only: what a deployment without definitions runs. */
export const builtinCatalog = AgentCatalog.from();

/** A name of the deployment's agents (or workflows); another is refused with the list of names. */
function definedName(kind: 'agent' | 'workflow', names: readonly string[]) {
  return z
    .string()
    .refine((name) => names.includes(name), { error: (issue) => `unknown ${kind} ${JSON.stringify(issue.input)}; this deployment has ${names.join(', ')}` })
    .meta({ description: `The ${kind} to run (\`GET /agents\` lists them).` });
}

/** The fields of a run request, as `POST /runs` and the fork route validate them. */
export function runRequestFields({ allowedModels, externalToolNames, agents = builtinCatalog }: RunRequestRules = {}) {
  return {
    goal: z.string().trim().min(1, 'must not be empty').max(maxGoalChars, `must be at most ${maxGoalChars} characters`),
    mode: z
      .enum(['single', 'multi'])
      .optional()
      .meta({ description: 'The built-ins: `single` is the agent `assistant`, `multi` the workflow `plan-and-build` (the default when no agent or workflow is named).' }),
    // The Architect and the Coder work only as plan-and-build: the Coder alone has no plan to start from.
    agent: definedName('agent', agents.agentNames().filter((name) => !workflowOnlyAgents.includes(name))).optional(),
    workflow: definedName('workflow', agents.workflowNames()).optional(),
    agentVersion: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .meta({ description: 'The version (`GET /agents`) the agent or workflow must be at: another is refused, so runs compared are runs of one definition.' }),
    sessionId: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_" or "-"')
      .optional(),
    maxIterations: z
      .number()
      .int()
      .min(1)
      .max(200)
      .optional()
      .meta({ description: `The most model calls of each agent; the agent's own limit, or ${defaultMaxIterations}, when absent (the lower of the two when both are set).` }),
    model: modelField(allowedModels),
    // A policy may name the deployment's tools only: a name it does not have would leave calls ungated.
    approvals: approvalPolicy(externalToolNames ?? noExternalTools).optional(),
    budget: Budget.optional(),
    output: OutputRequest.optional(),
    memory: MemorySettings.optional(),
  };
}

type Target = { mode?: 'single' | 'multi' | undefined; agent?: string | undefined; workflow?: string | undefined };

/** A request names at most one of `mode`, `agent` and `workflow`. */
const oneTarget = {
  check: (body: Target) => [body.mode, body.agent, body.workflow].filter((value) => value !== undefined).length <= 1,
  params: { path: ['agent'], message: 'name one of mode, agent or workflow' },
};

const sessionsAreSingle = {
  check: (body: Target & { sessionId?: string | undefined }) => !(body.sessionId && targetOf(body).kind === 'workflow'),
  params: { path: ['sessionId'], message: 'sessions continue one agent\'s conversation; name an agent (or mode "single") with a sessionId' },
};

/** The version a request pins is the deployment's version of what it runs (an unknown name is refused by its own field). */
function pinnedVersion(agents: Definitions = builtinCatalog) {
  const current = (body: Target) => {
    const target = targetOf(body);
    const definition = target.kind === 'agent' ? agents.agent(target.name) : agents.workflow(target.name);
    return definition && versionOf(definition);
  };
  return {
    check: (body: Target & { agentVersion?: string | undefined }) => {
      const version = body.agentVersion === undefined ? undefined : current(body);
      return version === undefined || version === body.agentVersion;
    },
    params: {
      path: ['agentVersion'],
      error: (issue: { input: unknown }) => {
        const body = issue.input as Target & { agentVersion?: string };
        const target = targetOf(body);
        return `this deployment's ${target.kind} ${target.name} is version ${current(body) ?? '?'}, not ${body.agentVersion ?? '?'}`;
      },
    },
  };
}

/**
 * Files a run's workspace starts with (`POST /runs` only: the API writes them before the run
 * starts), by workspace-relative path, each path as the workspace takes it.
 */
export const SeedFiles = z
  .record(z.string(), z.string())
  .superRefine((files, ctx) => {
    const entries = Object.entries(files);
    if (entries.length > maxSeedFiles) ctx.addIssue({ code: 'custom', message: `must be at most ${maxSeedFiles} files` });
    const size = entries.reduce((sum, [, text]) => sum + new TextEncoder().encode(text).length, 0);
    if (size > maxSeedBytes) ctx.addIssue({ code: 'custom', message: `must be at most ${maxSeedBytes} bytes together, not ${size}` });
    for (const [path] of entries) {
      try {
        checkPath(path);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: [path], message: error instanceof Error ? error.message : String(error) });
      }
    }
  })
  .meta({ description: `Text files the run's workspace starts with, by path (at most ${maxSeedFiles} files, ${maxSeedBytes} bytes together).` });

/** What a request runs: one agent, or a workflow (`plan-and-build` when it names nothing). */
export function targetOf(body: Target): { kind: 'agent' | 'workflow'; name: string } {
  if (body.agent !== undefined) return { kind: 'agent', name: body.agent };
  if (body.workflow !== undefined) return { kind: 'workflow', name: body.workflow };
  return body.mode === 'single' ? { kind: 'agent', name: 'assistant' } : { kind: 'workflow', name: 'plan-and-build' };
}

/** An agent with an output schema of its own answers with it: a request does not name another. */
function ownOutput(agents: Definitions = builtinCatalog) {
  return {
    check: (body: Target & { output?: unknown }) => !(body.output && answeringAgent(targetOf(body), agents)?.output),
    params: { path: ['output'], message: 'the agent that answers this run has its own output schema; leave output out' },
  };
}

/** The agent whose answer is the run's: the agent named, or the one agent of a workflow's last step. */
export function answeringAgent(target: { kind: 'agent' | 'workflow'; name: string }, agents: Definitions = builtinCatalog): AgentDefinition | undefined {
  if (target.kind === 'agent') return agents.agent(target.name);
  const last = agents.workflow(target.name)?.steps.at(-1);
  return typeof last === 'string' ? agents.agent(last) : undefined;
}

/** The body of `POST /runs`, with the deployment's list of models applied when it has one, its tools and its agents. */
export function createRunBody(rules: RunRequestRules = {}) {
  const output = ownOutput(rules.agents);
  const pinned = pinnedVersion(rules.agents);
  return z
    .object({ ...runRequestFields(rules), files: SeedFiles.optional() })
    .strict()
    .refine(oneTarget.check, oneTarget.params)
    .refine(sessionsAreSingle.check, sessionsAreSingle.params)
    .refine(output.check, output.params)
    .refine(pinned.check, pinned.params);
}

/** The body of `POST /runs`, any model allowed, the built-in tools only (the body's type). */
export const CreateRunBody = createRunBody();

export type CreateRunBody = z.infer<typeof CreateRunBody>;

/** Executions are named `<runId>-<agent>-<iteration>`; Step Functions allows 80 characters. */
export const ClientRunId = z.string().regex(/^[A-Za-z0-9_-]{1,56}$/, 'must be 1-56 letters, digits, "_" or "-"');

/** The detail of a `Stepwise Run Requested` event: the `POST /runs` body plus an optional client run id. */
export function runRequestedDetail(rules: RunRequestRules = {}) {
  return z
    .object({
      ...runRequestFields(rules),
      runId: ClientRunId.optional(),
      /** The caller a trusted source starts the run for; it then owns the run. */
      onBehalfOf: Owner.strict().optional(),
      /** The schedule that fired the request (the schedules source, on behalf of its owner: docs/schedules.md). */
      scheduleId: ScheduleId.optional(),
      /** The sender's W3C trace context: the run's trace is a child of its span (docs/traces.md). */
      traceparent: z.string().max(256).optional(),
    })
    .strict()
    .refine(oneTarget.check, oneTarget.params)
    .refine(sessionsAreSingle.check, sessionsAreSingle.params)
    .refine(ownOutput(rules.agents).check, ownOutput(rules.agents).params)
    .refine(pinnedVersion(rules.agents).check, pinnedVersion(rules.agents).params);
}

export const RunRequestedDetail = runRequestedDetail();

export type RunRequestedDetail = z.infer<typeof RunRequestedDetail>;

export const runRequestedDetailType = 'Stepwise Run Requested';
