/**
 * Agent and workflow definitions (DESIGN §12; docs/agents.md): what a team writes to run its own
 * agents, validated with zod, and the deployment's set of them as intake reads it.
 */
import * as z from 'zod';
import { agentNamePattern } from '../agents/types.js';
import { ApprovalPolicy } from '../approvals/types.js';
import { Budget } from '../budgets/types.js';
import { MemorySettings } from '../memory/types.js';

const name = z.string().regex(agentNamePattern, 'must be 1-64 of a-z, 0-9 and "-"');

/** One entry of an agent's `tools`: a built-in tool, a Lambda tool, `server__tool`, `server__*` or `agent:<name>`. */
const ToolEntry = z.string().min(1).max(200);

export const AgentDefinition = z
  .strictObject({
    name,
    description: z.string().trim().min(1, 'must not be empty').max(1024),
    /** The system prompt; the deployment's own rules (the workspace's) are appended. */
    instructions: z.string().trim().min(1, 'must not be empty').max(50_000),
    tools: z.array(ToolEntry).max(100).default([]),
    model: z.string().min(1).max(200).optional(),
    maxTokens: z.number().int().positive().max(128_000).optional(),
    maxIterations: z.number().int().min(1).max(200).optional(),
    /** The JSON Schema its final answer must match (structured output); checked as a run's `output` is. */
    output: z.strictObject({ schema: z.record(z.string(), z.unknown()) }).optional(),
    approvals: ApprovalPolicy.optional(),
    budget: Budget.optional(),
    /** Long-term memory for the runs it starts (docs/memory.md). */
    memory: MemorySettings.optional(),
  })
  .meta({ id: 'AgentDefinition' });

export type AgentDefinition = z.infer<typeof AgentDefinition>;

/** A step of a workflow: one agent, or agents that work at once on the same input. */
export const WorkflowStep = z.union([name, z.strictObject({ parallel: z.array(name).min(2).max(10) })]);

export type WorkflowStep = z.infer<typeof WorkflowStep>;

export const WorkflowDefinition = z
  .strictObject({
    name,
    description: z.string().trim().min(1, 'must not be empty').max(1024),
    steps: z.array(WorkflowStep).min(1).max(20),
  })
  .meta({ id: 'WorkflowDefinition' });

export type WorkflowDefinition = z.infer<typeof WorkflowDefinition>;

/** The deployment's agents and workflows (`AgentCatalog` in catalog.ts), as intake and the API read them. */
export interface Definitions {
  agent(name: string): AgentDefinition | undefined;
  workflow(name: string): WorkflowDefinition | undefined;
  /** The agents' names, the built-ins first. */
  agentNames(): string[];
  workflowNames(): string[];
}
