/** Lambda: one tool call of an agent loop. */
import { scopedWorkspaces } from '../adapters/wiring-workspaces.js';
import { wire } from '../adapters/wiring.js';
import { ToolInput, type ToolStepResult, toolStep } from '../core/steps.js';
import { parseEvent } from './events.js';

const wiring = wire(process.env, { workspaces: scopedWorkspaces });

export async function handler(event: unknown): Promise<ToolStepResult> {
  return toolStep(parseEvent(ToolInput, event), wiring);
}
