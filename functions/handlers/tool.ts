/** Lambda: one tool call of an agent loop. */
import { callingSources } from '../adapters/wiring-external.js';
import { agentProfile } from '../core/agents.js';
import { metricNames, otherTool } from '../core/metrics.js';
import { ToolInput, type ToolStepResult, toolStep } from '../core/steps.js';
import { count, dimensions, instrumented, logger, stepKeys } from '../adapters/telemetry.js';
import { scopedWorkspaces } from '../adapters/wiring-workspaces.js';
import { wire } from '../adapters/wiring.js';
import { parseEvent } from './events.js';

const wiring = wire(process.env, { workspaces: scopedWorkspaces, externalTools: callingSources });

export async function handler(event: unknown): Promise<ToolStepResult> {
  const keys = stepKeys(event);
  return instrumented(keys, async () => {
    const input = parseEvent(ToolInput, event);
    // A name the model made up is not a dimension of its own: each value is a billed metric.
    const known = keys.tool !== undefined && agentProfile(input.agent).tools.get(keys.tool) !== undefined;
    dimensions({ agent: input.agent, tool: known ? keys.tool : otherTool });
    const result = await toolStep(input, wiring);
    count(metricNames.toolCalls);
    count(metricNames.toolErrors, result.isError ? 1 : 0);
    logger.info('Tool step finished', { isError: result.isError });
    return result;
  });
}
