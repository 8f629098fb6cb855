/**
 * The agents: their names, and what each one is to the loop (its system prompt, its tools, the
 * tool whose success ends its part).
 */
import * as z from 'zod';
import type { Tools } from '../tools/types.js';

export const AgentName = z.enum(['single', 'architect', 'coder']);

export type AgentName = z.infer<typeof AgentName>;

export interface AgentProfile {
  name: AgentName;
  system: string;
  tools: Tools;
  /** A tool whose successful call ends the agent's part of the run. */
  finishTool?: string;
}
