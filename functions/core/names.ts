/**
 * The names the rest of the core shares, in a module that imports no other core module but the
 * tools: the agents and the tools they may call.
 */
import * as z from 'zod';
import { calculator } from './tools/calculator.js';
import { editFile, listFiles, readFile, writeFile } from './tools/files.js';
import { finishPlan } from './tools/finish-plan.js';
import type { Tool } from './tools/registry.js';

export const AgentName = z.enum(['single', 'architect', 'coder']);
export type AgentName = z.infer<typeof AgentName>;

/** The built-in tools, in the order the model sees them (all but the Architect's `finish_plan`). */
export const builtinTools: readonly Tool[] = [calculator, readFile, writeFile, listFiles, editFile];

/** Every tool an agent may call, by name. */
export const toolNames: readonly string[] = [...builtinTools.map((tool) => tool.name), finishPlan.name];
