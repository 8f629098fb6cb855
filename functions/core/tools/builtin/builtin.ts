/**
 * The built-in tools, in the order the model sees them, and every name an agent may call.
 */
import { calculator } from './calculator.js';
import { editFile, listFiles, readFile, writeFile } from './files.js';
import { finishPlan } from './finish-plan.js';
import type { Tool } from '../types.js';

/** The built-in tools, in the order the model sees them (all but the Architect's `finish_plan`). */
export const builtinTools: readonly Tool[] = [calculator, readFile, writeFile, listFiles, editFile];

/** Every tool an agent may call, by name. */
export const toolNames: readonly string[] = [...builtinTools.map((tool) => tool.name), finishPlan.name];

const byName = new Map([...builtinTools, finishPlan].map((tool) => [tool.name, tool]));

/** A built-in tool by name (`finish_plan` included). */
export function builtinTool(name: string): Tool | undefined {
  return byName.get(name);
}
