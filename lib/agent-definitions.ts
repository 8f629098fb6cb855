/**
 * A deployment's own agents and workflows as construct props (DESIGN §12): plain JSON-compatible
 * interfaces, checked at synth with the same rules the functions apply when they load, so a
 * definition naming an unknown tool or agent, or agents calling each other in a cycle, fails
 * `cdk synth` (and `npm run dev`) with one line naming the definition and field.
 */
import type * as z from 'zod';
import { AgentCatalog, type AgentCatalogRules } from '../functions/core/definitions/catalog.js';
import type { AgentDefinition, WorkflowDefinition } from '../functions/core/definitions/types.js';
import { AgentConfigInvalid } from '../functions/core/agents/types.js';
import { messageOf } from '../functions/core/errors/errors.js';

/** An approval rule of an agent: calls of `tool` whose input fields match their globs are approved, denied or asked about. */
export interface AgentApprovalRuleConfig {
  readonly tool: string;
  /** Input field → glob (`*` within a path segment, `**` across, `?` one character). @default any input */
  readonly input?: Readonly<Record<string, string>>;
  readonly action: 'approve' | 'deny' | 'ask';
}

/** Which of an agent's tool calls wait for a reviewer (the policy of a run's `approvals`). */
export interface AgentApprovalsConfig {
  /** Tools whose calls wait for a reviewer. @default [] */
  readonly tools?: string[];
  /** Checked in order before a gated call waits; the first that matches decides it. @default none */
  readonly rules?: AgentApprovalRuleConfig[];
}

/** One agent a deployment runs: `POST /runs { agent: "<name>" }`, or a step of a workflow, or another agent's tool. */
export interface AgentDefinitionConfig {
  /** 1-64 of `a-z`, `0-9` and `-`; not a built-in's (`assistant`, `architect`, `coder`, `plan-and-build`, `single`, `multi`). */
  readonly name: string;
  /** What it does: listed by `GET /agents`, and the tool description when another agent calls it. */
  readonly description: string;
  /** Its system prompt; the deployment's own rules (the workspace's) are appended. */
  readonly instructions: string;
  /**
   * Built-in tools, the deployment's Lambda tools, MCP tools (`server__tool`) or whole servers
   * (`server__*`), and other agents as `agent:<name>`.
   * @default [] (none)
   */
  readonly tools?: string[];
  /** @default the deployment's model; one of `allowedModels` otherwise */
  readonly model?: string;
  /** @default the deployment's `maxTokens` */
  readonly maxTokens?: number;
  /** @default the run's */
  readonly maxIterations?: number;
  /**
   * The JSON Schema (`"type": "object"`) its final answer must match.
   * @default a text answer
   */
  readonly output?: { readonly schema: Readonly<Record<string, unknown>> };
  /** @default none beyond the deployment's and the run's */
  readonly approvals?: AgentApprovalsConfig;
  /** @default the run's */
  readonly budget?: { readonly maxUsd?: number; readonly maxTokens?: number };
}

/** A step of a workflow: one agent's name, or agents that work at once on the same input. */
export type WorkflowStepConfig = string | { readonly parallel: string[] };

/** A deployment's workflow: `POST /runs { workflow: "<name>" }` runs its steps in order. */
export interface WorkflowDefinitionConfig {
  /** 1-64 of `a-z`, `0-9` and `-`; not an agent's or a built-in's. */
  readonly name: string;
  readonly description: string;
  /** Each step's agents receive the goal and the previous step's result. */
  readonly steps: WorkflowStepConfig[];
}

/** A deployment's definitions, as the construct takes them. */
export interface AgentDefinitionsConfig {
  readonly agents?: readonly AgentDefinitionConfig[];
  readonly workflows?: readonly WorkflowDefinitionConfig[];
}

/**
 * The deployment's catalog, checked against its tools and models; throws `AgentConfigInvalid`
 * whose message is one line: `Stepwise agents: <definition>: <field> …`.
 */
export function checkedAgentCatalog(config: AgentDefinitionsConfig, rules: AgentCatalogRules): AgentCatalog {
  // Typed as the schemas take them, so props and schemas cannot drift apart unnoticed.
  const agents: readonly z.input<typeof AgentDefinition>[] | undefined = config.agents;
  const workflows: readonly z.input<typeof WorkflowDefinition>[] | undefined = config.workflows;
  try {
    return AgentCatalog.from({ agents, workflows }, rules);
  } catch (error) {
    if (!(error instanceof AgentConfigInvalid)) throw error;
    throw agentsInvalid(messageOf(error));
  }
}

/** The error a bad definition fails synth with: one line, so the CDK CLI and `npm run dev` print it whole. */
export function agentsInvalid(message: string): AgentConfigInvalid {
  return new AgentConfigInvalid(`Stepwise agents: ${message.replace(/\s*\n\s*/g, ' ')}`);
}

/**
 * The longest argument Linux passes to a process (`MAX_ARG_STRLEN` less its terminating NUL): CDK
 * hands esbuild each `--define:<name>=<value>` as one argument.
 */
export const maxDefineArgumentBytes = 131_071;

/**
 * The esbuild `define` that bundles a deployment's agent and workflow definitions into a function's
 * code, where `functions/wiring/agents.ts` reads them (`process.env.STEPWISE_BUNDLED_AGENTS`,
 * `…_WORKFLOWS`): a Lambda's environment holds 4 KB in all, and one definition's instructions may
 * be longer. Empty without definitions, so such a deployment's bundles stay as they were. Throws
 * `AgentConfigInvalid` when the definitions are too long for esbuild's command line.
 */
export function definitionsDefine(config: AgentDefinitionsConfig): Record<string, string> {
  const define: Record<string, string> = {};
  if (config.agents?.length) define['process.env.STEPWISE_BUNDLED_AGENTS'] = JSON.stringify(JSON.stringify(config.agents));
  if (config.workflows?.length) define['process.env.STEPWISE_BUNDLED_WORKFLOWS'] = JSON.stringify(JSON.stringify(config.workflows));
  for (const [name, value] of Object.entries(define)) {
    const bytes = Buffer.byteLength(`--define:${name}=${value}`);
    if (bytes > maxDefineArgumentBytes) {
      const kind = name.endsWith('AGENTS') ? 'agents' : 'workflows';
      throw agentsInvalid(`the ${kind}' definitions take ${bytes} bytes as the functions' bundling argument, over the ${maxDefineArgumentBytes} one argument may hold: shorten their instructions`);
    }
  }
  return define;
}
