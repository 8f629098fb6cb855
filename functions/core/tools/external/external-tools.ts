/**
 * Tools from outside Stepwise: the tools of remote MCP servers and a deployment's own Lambda
 * functions. Core knows them only through the `ToolSource` port; the adapters speak MCP and
 * Lambda Invoke.
 *
 * The tools a run offers are listed once, at its first model call, and stored as the run's
 * catalog with a conditional write; every later step of the run (and every tool step) reads that
 * catalog, so a retried step or a server whose tools change mid-run never changes the bytes sent
 * to the model (invariant 4, docs/ARCHITECTURE.md).
 */
import * as z from 'zod';
import { InfrastructureError, messageOf } from '../../errors/errors.js';
import { lambdaCapabilities } from '../../untrusted/capabilities.js';
import type { ToolSpec } from '../../model/types.js';
import {
  defaultExternalAgents,
  type ExternalCallContext,
  type ExternalOutcome,
  type ExternalTool,
  type ExternalToolsPort,
  LambdaToolConfig,
  McpServerConfig,
  type ToolCatalog,
  type ToolCatalogStore,
  type ToolSource,
} from './types.js';

/**
 * The external tools of a deployment, checked as a whole: unique names, none taking a built-in
 * tool's name. `reserved` are the built-in names.
 */
export function externalToolsConfig(reserved: readonly string[]) {
  return z
    .object({ mcpServers: z.array(McpServerConfig).default([]), lambdaTools: z.array(LambdaToolConfig).default([]) })
    .superRefine(({ mcpServers, lambdaTools }, ctx) => {
      const seen = new Set<string>();
      mcpServers.forEach((server, i) => {
        if (seen.has(server.name)) ctx.addIssue({ code: 'custom', path: ['mcpServers', i, 'name'], message: `server "${server.name}" is configured twice` });
        seen.add(server.name);
      });
      const tools = new Set<string>();
      lambdaTools.forEach((tool, i) => {
        if (reserved.includes(tool.name)) {
          ctx.addIssue({ code: 'custom', path: ['lambdaTools', i, 'name'], message: `"${tool.name}" is a built-in tool's name` });
        }
        if (tools.has(tool.name)) ctx.addIssue({ code: 'custom', path: ['lambdaTools', i, 'name'], message: `tool "${tool.name}" is configured twice` });
        tools.add(tool.name);
      });
    });
}

/** The external tools of runs: listed once per run, stored, and called by name. */
export class ExternalTools implements ExternalToolsPort {
  private readonly byId: Map<string, ToolSource>;
  private readonly cache = new Map<string, ToolCatalog>();

  constructor(
    sources: readonly ToolSource[],
    private readonly store: ToolCatalogStore,
    private readonly options: { clock?: () => Date; log?: (message: string, detail: Record<string, unknown>) => void } = {},
  ) {
    this.byId = new Map(sources.map((source) => [source.id, source]));
  }

  /**
   * The run's catalog: the stored one, else the sources listed now and stored once (a concurrent
   * or retried step that lost the write gets the winner's). A source that fails to list is left
   * out and named in `unavailable`; listing never fails the step.
   */
  async forRun(runId: string): Promise<ToolCatalog> {
    const known = await this.stored(runId);
    if (known) return known;
    const catalog = await this.listAll();
    return this.remember(runId, await this.store.putCatalog(runId, catalog));
  }

  /** The run's stored catalog, without listing (the tool step). */
  async stored(runId: string): Promise<ToolCatalog | undefined> {
    const cached = this.cache.get(runId);
    if (cached) return cached;
    const stored = await this.store.getCatalog(runId);
    return stored ? this.remember(runId, stored) : undefined;
  }

  /**
   * Calls one tool. Every failure the model can act on (the tool's own error, a server that is
   * down, a timeout) comes back as an error outcome (invariant 5, docs/ARCHITECTURE.md); only infrastructure faults throw.
   */
  async call(tool: ExternalTool, input: unknown, context: ExternalCallContext): Promise<ExternalOutcome> {
    const source = this.byId.get(tool.source);
    if (!source) return { content: `${tool.name} is not available in this deployment any more.`, isError: true, ran: false };
    try {
      return await source.call(tool, input, context);
    } catch (error) {
      if (error instanceof InfrastructureError) throw error;
      return { content: `${tool.name} failed: ${messageOf(error)}`, isError: true };
    }
  }

  private async listAll(): Promise<ToolCatalog> {
    const listed = await Promise.all(
      [...this.byId.values()].map((source) =>
        source.list().then(
          (tools) => ({ source, tools }),
          (error: unknown) => ({ source, reason: messageOf(error) }),
        ),
      ),
    );
    const tools: ExternalTool[] = [];
    const unavailable: ToolCatalog['unavailable'] = [];
    const names = new Set<string>();
    for (const outcome of listed) {
      const source = outcome.source.id;
      if ('reason' in outcome) {
        const { reason } = outcome;
        this.options.log?.('External tool source unavailable; its tools are left out of the run', { source, reason });
        unavailable.push({ source, reason, agents: [...outcome.source.agents] });
        continue;
      }
      for (const tool of outcome.tools) {
        if (names.has(tool.name)) {
          unavailable.push({ source, reason: `tool ${tool.name} is listed twice; the first one is kept`, agents: [] });
          continue;
        }
        names.add(tool.name);
        tools.push(tool);
      }
    }
    return { tools, unavailable, listedAt: (this.options.clock?.() ?? new Date()).toISOString() };
  }

  private remember(runId: string, catalog: ToolCatalog): ToolCatalog {
    // A catalog never changes once stored, so a warm function may keep it; a few hundred runs at most.
    if (this.cache.size >= 200) {
      const [oldest] = this.cache.keys();
      // Stryker disable next-line ConditionalExpression: the cache holds 200 entries here, so it has an oldest
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(runId, catalog);
    return catalog;
  }
}

/** The catalog's tools an agent sees (`sees`: its profile's `hasExternal`), after its built-in ones, in catalog order (stable). */
export function externalSpecs(catalog: ToolCatalog | undefined, sees: (tool: ExternalTool) => boolean): ToolSpec[] {
  return (catalog?.tools ?? [])
    .filter(sees)
    .map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
}

/** A paragraph for the agent's system prompt naming its sources (`uses`: its profile's `usesSource`) that were down when the run began. */
export function unavailableNote(catalog: ToolCatalog | undefined, uses: (source: { source: string; agents: readonly string[] }) => boolean): string {
  const down = (catalog?.unavailable ?? []).filter(uses);
  if (down.length === 0) return '';
  const names = [...new Set(down.map((d) => d.source))].join(', ');
  return `\n\nSome external tools could not be listed when this run began and are not offered: ${names}.`;
}

/** A source that lists fixed tools and cannot call them: what the inference step needs of Lambda tools. */
export function listedLambdaTools(configs: readonly LambdaToolConfig[]): ToolSource {
  const tools = lambdaCatalogEntries(configs);
  return {
    id: 'lambda',
    agents: [...new Set(tools.flatMap((tool) => tool.agents))],
    list: () => Promise.resolve(tools),
    call: () => Promise.reject(new Error('This function lists Lambda tools but does not call them.')),
  };
}

/** The catalog entries of the configured Lambda tools. */
export function lambdaCatalogEntries(configs: readonly LambdaToolConfig[]): ExternalTool[] {
  return configs.map((config) => ({
    name: config.name,
    description: config.description,
    inputSchema: config.inputSchema,
    source: 'lambda',
    target: config.functionName,
    agents: [...(config.agents ?? defaultExternalAgents)],
    capabilities: lambdaCapabilities(config),
  }));
}
