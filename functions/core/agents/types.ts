/**
 * Agents: the names of their places in a run, the reference a run keeps to the definition it
 * started with, and what each agent is to the loop (its system prompt, its tools, the tool whose
 * success ends its part). The definitions themselves are in `definition.ts` (docs/agents.md).
 */
import * as z from 'zod';
import { named } from '../errors/errors.js';
import type { Tools } from '../tools/types.js';

/** An agent definition's name: 1-64 of `[a-z0-9-]`. */
export const agentNamePattern = /^[a-z0-9-]{1,64}$/;

/**
 * The name of an agent's place in a run, under which its conversation (`run/<runId>/<agent>`), its
 * messages, iterations and usage are recorded: the definition's name, except the built-in
 * `assistant`, whose place is `single` as it always was (runs made before agents were data keep
 * their records).
 */
export const AgentName = z.string().regex(agentNamePattern, 'an agent is 1-64 of a-z, 0-9 and "-"');

export type AgentName = z.infer<typeof AgentName>;

/** The places of the built-in agents. */
export const BuiltinAgentName = z.enum(['single', 'architect', 'coder']);

export type BuiltinAgentName = z.infer<typeof BuiltinAgentName>;

/** Which definition a run's agent follows: its name and version (a content hash). */
export const AgentRef = z.object({ name: AgentName, version: z.string().regex(/^[0-9a-f]{12}$/) });

export type AgentRef = z.infer<typeof AgentRef>;

export interface AgentProfile {
  /** The agent's place in the run. */
  name: AgentName;
  /** The definition it follows, when the run recorded one. */
  definition?: AgentRef;
  system: string;
  /** Its built-in tools, and the tools that call the agents it may call. */
  tools: Tools;
  /** The names of the tools that call agents (a call starts a child run). */
  agentTools: ReadonlySet<string>;
  /** Whether it may see and call one of the deployment's MCP or Lambda tools. */
  hasExternal(tool: { name: string; source: string; agents: readonly string[] }): boolean;
  /** Whether it has any tool of a source (`mcp:<server>` or `lambda`), for the note when the source is down. */
  usesSource(source: { source: string; agents: readonly string[] }): boolean;
  /** A tool whose successful call ends the agent's part of the run. */
  finishTool?: string;
  /** Whether its final answer is the run's (the Architect only plans). */
  answersRun: boolean;
  /** The model it calls unless the run asks for another; the deployment's when absent. */
  model?: string;
  /** The most tokens of one answer; the deployment's when absent. */
  maxTokens?: number;
}

/** Where definitions are kept, once per version (`agent#<name>` / `v#<version>`). */
export interface AgentDefinitionStore {
  /** The stored definition of a version, as JSON. */
  get(ref: AgentRef): Promise<unknown>;
  /** Stores a version unless it is stored (the same version is the same content). */
  put(ref: AgentRef, definition: unknown): Promise<void>;
}

/** The deployment's agents or workflows are invalid: one line naming the definition and field. */
export class AgentConfigInvalid extends named('AgentConfigInvalid') {}

/** A run follows a version that is stored nowhere. */
export class AgentDefinitionMissing extends named('AgentDefinitionMissing') {}
