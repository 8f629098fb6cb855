/** Lambda: one tool call of an agent loop. */
import { callingSources } from '../wiring/external.js';
import { toolNames } from '../core/tools/builtin/builtin.js';
import { memoryToolName } from '../core/memory/tool.js';
import { metricNames, otherTool } from '../core/telemetry/metrics.js';
import { mcpSeparator } from '../core/tools/external/types.js';
import { mcpServerOf } from '../core/tools/external/names.js';
import { ToolInput, type ToolStepResult } from '../core/steps/types.js';
import { toolStep } from '../core/steps/tool.js';
import { childFailed } from '../core/children/children.js';
import { count, dimensions, instrumented, logger, stepKeys } from '../adapters/aws/telemetry.js';
import { scopedMemories, scopedWorkspaces } from '../wiring/workspaces.js';
import { externalConfig, wire } from '../wiring/wire.js';
import { otlpTraces } from '../wiring/tracer.js';
import { parseEvent } from '../core/steps/input.js';

const wiring = wire(process.env, { workspaces: scopedWorkspaces, memories: scopedMemories, externalTools: callingSources, traces: otlpTraces });
const { mcpServers, lambdaTools } = externalConfig(wiring.env);
const lambdaToolNames = new Set(lambdaTools.map((tool) => tool.name));
const serverNames = new Set(mcpServers.map((server) => server.name));

/**
 * The `tool` dimension of a call: a built-in or Lambda tool by name, an MCP tool as its server
 * (`docs__*`), anything else `other`. Each value is a billed metric, so the set stays bounded by
 * configuration: a model that makes names up adds none.
 */
function toolDimension(name: string | undefined): string {
  if (name === undefined) return otherTool;
  if (toolNames.includes(name) || name === memoryToolName || lambdaToolNames.has(name)) return name;
  const server = mcpServerOf(name);
  return server !== undefined && serverNames.has(server) ? `${server}${mcpSeparator}*` : otherTool;
}

/** What the agent loop sends: a tool step, or the failure of a child run's nested execution (a call of an agent). */
type ToolEvent = { action?: 'child-failed'; failure?: { Error?: string; Cause?: string } };

export async function handler(event: unknown): Promise<ToolStepResult | Record<string, never>> {
  try {
    return await handle(event);
  } finally {
    // Lambda freezes the process once it answers: the call's span goes before (docs/traces.md).
    await wiring.traces.tracer.flush();
  }
}

async function handle(event: unknown): Promise<ToolStepResult | Record<string, never>> {
  const keys = stepKeys(event);
  const { action, failure } = (typeof event === 'object' && event !== null ? event : {}) as ToolEvent;
  if (action === 'child-failed') {
    return instrumented(keys, async () => {
      await childFailed(parseEvent(ToolInput, event), failure ?? {}, wiring);
      return {};
    });
  }
  return instrumented(keys, async () => {
    const input = parseEvent(ToolInput, event);
    dimensions({ agent: input.agent, tool: toolDimension(keys.tool) });
    const result = await toolStep(input, wiring);
    count(metricNames.toolCalls);
    count(metricNames.toolErrors, result.isError ? 1 : 0);
    logger.info('Tool step finished', { isError: result.isError });
    return result;
  });
}
