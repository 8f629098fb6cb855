/**
 * The tools of an agent: each one's JSON Schema derived from its zod schema, so the two cannot
 * disagree (habit 2, docs/code-habits.md), and calls run with tool failures turned into data
 * (invariant 5).
 */
import * as z from 'zod';
import { InfrastructureError, messageOf } from '../errors/errors.js';
import { type ToolResultBlock, type ToolUseBlock, toolResult } from '../model/messages.js';
import type { ToolSpec } from '../model/types.js';
import type { Tool, ToolContext, ToolLimits, Tools } from './types.js';

export const defaultToolLimits: ToolLimits = { maxFileBytes: 10 * 1024 * 1024, maxListEntries: 1000 };

/** Declares a tool with its input type inferred from the schema. */
export function defineTool<Schema extends z.ZodType>(tool: Tool<Schema>): Tool<Schema> {
  return tool;
}

/** The JSON Schema of a tool's input, as the Messages API wants it. */
export function inputJsonSchema(tool: Tool): Record<string, unknown> {
  const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, { target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
  return schema;
}

/** A set of tools looked up by name. */
export class ToolRegistry implements Tools {
  private readonly byName: Map<string, Tool>;
  private specsCache: ToolSpec[] | undefined;

  constructor(tools: readonly Tool[]) {
    this.byName = new Map();
    for (const tool of tools) {
      if (this.byName.has(tool.name)) throw new Error(`Tool "${tool.name}" is registered twice.`);
      this.byName.set(tool.name, tool);
    }
  }

  get names(): string[] {
    return [...this.byName.keys()];
  }

  get(name: string): Tool | undefined {
    return this.byName.get(name);
  }

  /** The tools for the model, in registration order (stable, so the prompt cache hits). */
  specs(): ToolSpec[] {
    this.specsCache ??= [...this.byName.values()].map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: inputJsonSchema(tool),
    }));
    return this.specsCache;
  }


  /**
   * Runs one call and always answers with a `tool_result` (invariant 5, docs/ARCHITECTURE.md): an unknown tool, input
   * that fails the schema and a tool's own failure all become `is_error` results. Only
   * infrastructure faults are thrown, for the state machine to retry. `alsoAvailable` are the
   * names of other tools the agent has (external ones), for the unknown-tool message.
   */
  async execute(call: ToolUseBlock, ctx: ToolContext, alsoAvailable: readonly string[] = []): Promise<ToolResultBlock> {
    return (await this.attempt(call, ctx, alsoAvailable)).result;
  }

  /**
   * Like `execute`, saying whether the tool ran: an unknown tool or invalid input is refused
   * before the tool is reached (`ran: false`); a tool's own failure is a result of running it.
   */
  async attempt(call: ToolUseBlock, ctx: ToolContext, alsoAvailable: readonly string[] = []): Promise<{ result: ToolResultBlock; ran: boolean }> {
    const tool = this.byName.get(call.name);
    if (!tool) {
      const names = [...this.names, ...alsoAvailable];
      const message = `Unknown tool "${call.name}". Available tools: ${names.join(', ') || 'none'}.`;
      return { result: toolResult(call.id, message, true), ran: false };
    }
    const parsed = tool.input.safeParse(call.input);
    if (!parsed.success) {
      return { result: toolResult(call.id, `Invalid input for ${tool.name}: ${describeIssues(parsed.error)}`, true), ran: false };
    }
    try {
      return { result: toolResult(call.id, await tool.run(parsed.data, { ...ctx, toolUseId: call.id })), ran: true };
    } catch (error) {
      if (error instanceof InfrastructureError) throw error;
      return { result: toolResult(call.id, `${tool.name} failed: ${messageOf(error)}`, true), ran: true };
    }
  }
}

/** Zod issues as one line a model can act on: `path: problem; path: problem`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(input)'}: ${issue.message}`)
    .join('; ');
}
