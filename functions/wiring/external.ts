/**
 * Wiring of the external tools: MCP servers (both step functions) and Lambda tools (listed by
 * the inference function, invoked by the tool function, which alone bundles the Lambda client).
 */
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { AgentName } from '../core/agents/types.js';
import { type ExternalCallContext, type ExternalOutcome, type ExternalTool, type McpServerConfig, type ToolSource, defaultExternalAgents } from '../core/tools/external/types.js';
import { mcpSourceId } from '../core/tools/external/names.js';
import { listedLambdaTools } from '../core/tools/external/external-tools.js';
import { LambdaToolSource } from '../adapters/tools/lambda.js';
import type { McpToolsOptions } from '../adapters/tools/mcp.js';
import { logger } from '../adapters/aws/telemetry.js';
import { type Env, externalConfig, localCredentials, sdkAttempts } from './wire.js';

/** Logs a warning on the invocation's structured log (with its runId, agent and iteration keys). */
export function logWarning(message: string, detail: Record<string, unknown>): void {
  logger.warn(message, detail);
}

/**
 * An MCP server's tools, the MCP SDK loaded at the source's first use: building its schemas takes
 * about 100 ms of a cold start, which a step that lists from the run's stored catalog, or calls no
 * MCP tool, never needs.
 */
class LazyMcpToolSource implements ToolSource {
  readonly id: string;
  readonly agents: readonly AgentName[];
  private source: Promise<ToolSource> | undefined;

  constructor(
    private readonly server: McpServerConfig,
    private readonly options: McpToolsOptions,
  ) {
    this.id = mcpSourceId(server.name);
    this.agents = server.agents ?? defaultExternalAgents;
  }

  async list(): Promise<ExternalTool[]> {
    return (await this.loaded()).list();
  }

  async call(tool: ExternalTool, input: unknown, context: ExternalCallContext): Promise<ExternalOutcome> {
    return (await this.loaded()).call(tool, input, context);
  }

  private loaded(): Promise<ToolSource> {
    this.source ??= import('../adapters/tools/mcp.js').then(
      ({ McpToolSource }) => new McpToolSource(this.server, this.options),
      (error: unknown) => {
        this.source = undefined;
        throw error;
      },
    );
    return this.source;
  }
}

function mcpSources(env: Env, mcpServers: ReturnType<typeof externalConfig>['mcpServers']): ToolSource[] {
  return mcpServers.map(
    (server) =>
      new LazyMcpToolSource(server, {
        listTimeoutMs: env.STEPWISE_MCP_LIST_TIMEOUT_MS,
        callTimeoutMs: env.STEPWISE_EXTERNAL_TOOL_TIMEOUT_MS,
        log: logWarning,
      }),
  );
}

/** The inference function's sources: it lists tools, and never calls one. */
export function listingSources(env: Env): ToolSource[] {
  const { mcpServers, lambdaTools } = externalConfig(env);
  return [...mcpSources(env, mcpServers), ...(lambdaTools.length ? [listedLambdaTools(lambdaTools)] : [])];
}

/** The tool function's sources: calls go to the MCP servers and the Lambda functions. */
export function callingSources(env: Env): ToolSource[] {
  const { mcpServers, lambdaTools } = externalConfig(env);
  const sources = mcpSources(env, mcpServers);
  if (lambdaTools.length) {
    const local = env.STEPWISE_LAMBDA_ENDPOINT;
    const lambda = new LambdaClient({
      region: env.AWS_REGION,
      maxAttempts: sdkAttempts,
      ...(local ? { endpoint: local, credentials: localCredentials } : {}),
    });
    sources.push(new LambdaToolSource(lambdaTools, lambda, { timeoutMs: env.STEPWISE_EXTERNAL_TOOL_TIMEOUT_MS, warn: (message) => logWarning(message, {}) }));
  }
  return sources;
}
