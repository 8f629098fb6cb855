/**
 * The tools of Stepwise's MCP server (docs/mcp.md). Each one is a route of the HTTP API, called
 * in-process as the MCP request's own caller (`RouteCall`): the route checks the input, the
 * caller, the owner, the role and the quota, so every rule has one implementation and another
 * caller's run is the route's 404 (`RunNotFound`), here a tool error. A tool's result is a short
 * text (`mcp-text.ts`) and the route's JSON as `structuredContent`; a refusal is an error result
 * with the route's code and message.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import type { DecisionRecorded } from '../core/approvals/types.js';
import type { AgentSummary } from '../core/definitions/catalog.js';
import { acceptedText, decisionText, errorText, runLine, runText, runsText } from './mcp-text.js';
import type { RunView } from './schemas.js';

/** A route's answer: its status and its JSON. */
export interface RouteAnswer {
  status: number;
  body: unknown;
}

/** Calls a route of the HTTP API as the MCP request's caller. */
export type RouteCall = (method: 'GET' | 'POST', path: string, body?: Record<string, unknown>) => Promise<RouteAnswer>;

/** How long `start_run` with `wait` follows a run, and how often it reads it. */
export interface McpWaitSettings {
  /** At most this long; below API Gateway's 29-second limit, deployed. @default 20000 */
  waitMs?: number;
  /** @default 250 */
  pollMs?: number;
}

/** What the tools are built on, fixed when the function loads. */
export interface McpToolSettings {
  /** The deployment's agents and workflows, as `GET /agents` lists them: each defined agent is a `run_<agent>` tool. */
  agents: readonly AgentSummary[];
  wait?: McpWaitSettings;
}

/** What a tool handler gets besides its arguments (the SDK's `RequestHandlerExtra`, the parts used here). */
interface ToolCallExtra {
  _meta?: { progressToken?: string | number | undefined } | undefined;
  signal: AbortSignal;
  sendNotification(notification: { method: 'notifications/progress'; params: { progressToken: string | number; progress: number; message?: string } }): Promise<void>;
}

/** One tool, defined once: registered on each request's server with that request's `RouteCall`. */
export interface McpTool {
  name: string;
  register(server: McpServer, call: RouteCall): void;
}

/** What a tool says of itself in `tools/list`. */
interface ToolConfig<Shape extends z.ZodRawShape> {
  title: string;
  description: string;
  inputSchema: Shape;
  annotations: ToolAnnotations;
}

/** A tool of an input shape, its handler given the request's `RouteCall`. */
function tool<Shape extends z.ZodRawShape>(
  name: string,
  config: ToolConfig<Shape>,
  handler: (call: RouteCall, args: z.infer<z.ZodObject<Shape>>, extra: ToolCallExtra) => Promise<CallToolResult>,
): McpTool {
  // Registered as any shape: the SDK's types of a generic shape do not resolve, and it has checked the arguments against this one.
  const loose: ToolConfig<z.ZodRawShape> = config;
  return {
    name,
    register: (server, call) => {
      server.registerTool(name, loose, (args, extra) => handler(call, args as z.infer<z.ZodObject<Shape>>, extra));
    },
  };
}

/** The MCP tool that runs a defined agent: `run_<agent>`, `-` written `_` (tool names are `[A-Za-z0-9_-]`, and `_` reads as a word break). */
export function agentToolName(agent: string): string {
  return `run_${agent.replaceAll('-', '_')}`;
}

const runId = z.string().describe('The run id that start_run (or list_runs) gave.');

/** Every tool of the server: the run tools, then one per defined agent. Built once; schemas and texts do not change per request. */
export function mcpTools(settings: McpToolSettings): McpTool[] {
  const waitMs = settings.wait?.waitMs ?? 20_000;
  const wait = z
    .boolean()
    .optional()
    .describe(
      `Wait until the run ends or a tool call waits for a reviewer, at most ${Math.round(waitMs / 1000)} seconds; ` +
        'a request with a progress token gets progress notifications meanwhile.',
    );
  const defined = settings.agents.filter((agent) => agent.kind === 'agent' && !agent.builtin);
  const names = (kind: AgentSummary['kind']) =>
    settings.agents
      .filter((agent) => agent.kind === kind)
      .map((agent) => agent.name)
      .join(', ');

  const start = async (call: RouteCall, body: Record<string, unknown>, waitForIt: boolean | undefined, extra: ToolCallExtra): Promise<CallToolResult> => {
    const started = await call('POST', '/runs', body);
    if (!ok(started) || !waitForIt) return result(started, (answer: { runId: string; status: string; phase: string }) => acceptedText(answer, 'started'));
    const { runId: id } = started.body as { runId: string };
    return result(await follow(id, call, extra, settings.wait), runText);
  };

  return [
    tool(
      'start_run',
      {
        title: 'Start a run',
        description:
          'Starts an agent run on a goal, as POST /runs does, and answers with its run id (or, with wait, the run as it ended). ' +
          'Name at most one of agent, workflow or mode; without any, the plan-and-build workflow runs.',
        inputSchema: {
          goal: z.string().describe('What the agent should do.'),
          agent: z.string().optional().describe(`An agent of this deployment: ${names('agent')}.`),
          workflow: z.string().optional().describe(`A workflow of this deployment: ${names('workflow')}.`),
          mode: z.enum(['single', 'multi']).optional().describe('The built-ins: single is the agent assistant, multi the workflow plan-and-build.'),
          sessionId: z.string().optional().describe("Continues that session's conversation (one agent, one run at a time)."),
          wait,
        },
        annotations: { destructiveHint: false, openWorldHint: true },
      },
      async (call, { wait: waitForIt, ...body }, extra) => start(call, body, waitForIt, extra),
    ),
    tool(
      'get_run',
      {
        title: 'Read a run',
        description: 'A run: its status and phase, the tool calls waiting for a reviewer (with their toolUseId), its answer or error, its usage.',
        inputSchema: { runId },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      async (call, { runId: id }) => result(await call('GET', `/runs/${encodeURIComponent(id)}`), runText),
    ),
    tool(
      'list_runs',
      {
        title: 'List runs',
        description: "The caller's runs, newest first (scope tenant: every run of the caller's tenant, for reviewers and admins).",
        inputSchema: {
          status: z.enum(['running', 'succeeded', 'failed', 'cancelled']).optional(),
          limit: z.number().int().optional().describe('1-100; 20 by default.'),
          cursor: z.string().optional().describe('The cursor the previous page named.'),
          scope: z.enum(['mine', 'tenant']).optional(),
        },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      async (call, query) => {
        const search = new URLSearchParams(Object.entries(given(query)).map(([name, value]) => [name, String(value)] as [string, string]));
        return result(await call('GET', `/runs${search.size ? `?${search}` : ''}`), runsText);
      },
    ),
    tool(
      'cancel_run',
      {
        title: 'Cancel a run',
        description: 'Cancels a running run (its owner, or an admin of its tenant).',
        inputSchema: { runId },
        annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
      },
      async (call, { runId: id }) =>
        result(await call('POST', `/runs/${encodeURIComponent(id)}/cancel`), (answer: { runId: string; status: string; phase: string }) => acceptedText(answer, 'cancelled')),
    ),
    tool(
      'decide_approval',
      {
        title: 'Approve or deny a tool call',
        description:
          'Decides a tool call that waits for a reviewer (get_run lists them under waitingFor), as POST /runs/{runId}/approvals/{toolUseId} does: approve runs it, deny gives the model an error result. Needs the approve role.',
        inputSchema: {
          runId,
          toolUseId: z.string().describe('The waiting call, as get_run names it.'),
          decision: z.enum(['approve', 'deny']),
          message: z.string().optional().describe('What the model reads in the tool result.'),
          reason: z.string().optional().describe('Why, kept with the decision.'),
          input: z.record(z.string(), z.unknown()).optional().describe("Approve only: the input the call runs with instead of the model's."),
        },
        annotations: { destructiveHint: false, openWorldHint: false },
      },
      async (call, { runId: id, toolUseId, ...body }) =>
        result(await call('POST', `/runs/${encodeURIComponent(id)}/approvals/${encodeURIComponent(toolUseId)}`, body), (answer: DecisionRecorded) => decisionText(answer)),
    ),
    ...defined.map((agent) =>
      tool(
        agentToolName(agent.name),
        {
          title: `Run ${agent.name}`,
          description: `${agent.description} (Starts a run of the agent ${agent.name}, version ${agent.version}; follow it with get_run.)`,
          inputSchema: { goal: z.string().describe('What the agent should do.'), wait },
          annotations: { destructiveHint: false, openWorldHint: true },
        },
        async (call, { goal, wait: waitForIt }, extra) => start(call, { goal, agent: agent.name }, waitForIt, extra),
      ),
    ),
  ];
}

/**
 * Reads the run until it ends, a call waits for a reviewer, or the wait is over, sending a
 * progress notification each time what it is doing changes when the request asked for progress.
 * Answers with the last read.
 */
export async function follow(id: string, call: RouteCall, extra: ToolCallExtra, settings: McpWaitSettings = {}): Promise<RouteAnswer> {
  const { waitMs = 20_000, pollMs = 250 } = settings;
  const deadline = Date.now() + waitMs;
  const progressToken = extra._meta?.progressToken;
  let progress = 0;
  let said = '';
  for (;;) {
    const answer = await call('GET', `/runs/${encodeURIComponent(id)}`);
    if (!ok(answer)) return answer;
    const run = answer.body as RunView;
    const line = runLine(run);
    if (progressToken !== undefined && line !== said) {
      said = line;
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: ++progress, message: line } });
    }
    if (run.status !== 'running' || run.waitingFor.length > 0 || Date.now() + pollMs > deadline || extra.signal.aborted) return answer;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** A route's answer as a tool result: its summary and JSON, or its refusal as an error result. */
function result<T>(answer: RouteAnswer, summary: (body: T) => string): CallToolResult {
  const structuredContent = (typeof answer.body === 'object' && answer.body !== null ? answer.body : {}) as Record<string, unknown>;
  if (!ok(answer)) return { content: [{ type: 'text', text: errorText(answer.status, answer.body) }], structuredContent, isError: true };
  return { content: [{ type: 'text', text: summary(answer.body as T) }], structuredContent };
}

function ok(answer: RouteAnswer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/** The fields that were given (a query string would write the others `undefined`). */
function given<T extends Record<string, unknown>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;
}
