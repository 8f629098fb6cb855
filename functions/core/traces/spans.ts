/**
 * The spans of a run, as records with the OpenTelemetry GenAI semantic conventions' names
 * (docs/traces.md, "What a trace holds"): `chat <model>`, `execute_tool <tool>`,
 * `invoke_agent <agent>`, and the run's own `invoke_workflow <name>`.
 */
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_AGENT_VERSION,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_GEN_AI_WORKFLOW_NAME,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_WORKFLOW,
} from '@opentelemetry/semantic-conventions/incubating';
import type { ContentBlock, Usage } from '../model/messages.js';
import type { AttributeValue, RunTrace, SpanRecord } from './types.js';
import { agentSpanId, chatSpanId, toolSpanId } from './context.js';

/** Stepwise's own attribute: the run a span belongs to (a child run's spans carry the child's id). */
export const runIdAttribute = 'stepwise.run.id';

/** The most characters of captured content per attribute: a span stays far below a receiver's limit (X-Ray's is 200 KB). */
export const maxContentChars = 32_000;

function content(value: unknown): string {
  const text = JSON.stringify(value);
  return text.length <= maxContentChars ? text : `${text.slice(0, maxContentChars)}…[truncated ${text.length - maxContentChars} characters]`;
}

function usageAttributes(usage: Usage): Record<string, number> {
  return {
    [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: usage.inputTokens,
    [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: usage.outputTokens,
    [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: usage.cacheReadInputTokens,
    [ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: usage.cacheCreationInputTokens,
  };
}

/** An error as a span records it: its name is the `error.type`. */
export function spanError(error: unknown): NonNullable<SpanRecord['error']> {
  return error instanceof Error ? { type: error.name || 'Error', message: error.message } : { type: 'Error', message: String(error) };
}

/** What one model call was. */
export interface ChatCall {
  runId: string;
  agent: string;
  iteration: number;
  /** The call's number within its step (0, then 1 for a retry after "prompt is too long"). */
  call: number;
  conversationId: string;
  provider: string;
  requestModel: string;
  maxTokens: number;
  startTime: Date;
  endTime: Date;
  /** The answer; absent when the call failed. */
  response?: { model: string; stopReason: string; usage: Usage; content: ContentBlock[] };
  error?: unknown;
  /** Message content, only with the capture setting on: what the model was sent (its messages) and what it answered. */
  input?: unknown;
}

/** `chat <model>`: one model call, a child of its agent's span. */
export function chatSpan(trace: RunTrace, call: ChatCall, captureContent: boolean): SpanRecord {
  const { response } = call;
  const attributes: Record<string, AttributeValue> = {
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
    [ATTR_GEN_AI_PROVIDER_NAME]: call.provider,
    [ATTR_GEN_AI_REQUEST_MODEL]: call.requestModel,
    [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: call.maxTokens,
    [ATTR_GEN_AI_CONVERSATION_ID]: call.conversationId,
    [ATTR_GEN_AI_AGENT_NAME]: call.agent,
    [runIdAttribute]: call.runId,
    ...(response
      ? { [ATTR_GEN_AI_RESPONSE_MODEL]: response.model, [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: [response.stopReason], ...usageAttributes(response.usage) }
      : {}),
    ...(captureContent && call.input !== undefined ? { [ATTR_GEN_AI_INPUT_MESSAGES]: content(call.input) } : {}),
    ...(captureContent && response ? { [ATTR_GEN_AI_OUTPUT_MESSAGES]: content([{ role: 'assistant', content: response.content }]) } : {}),
  };
  const error = call.error === undefined ? undefined : spanError(call.error);
  return {
    name: `${GEN_AI_OPERATION_NAME_VALUE_CHAT} ${call.requestModel}`,
    traceId: trace.traceId,
    spanId: chatSpanId(trace, call.runId, call.agent, call.iteration, call.call),
    parentSpanId: agentSpanId(trace, call.runId, call.agent),
    kind: 'client',
    startTime: call.startTime,
    endTime: call.endTime,
    attributes: error ? { ...attributes, [ATTR_ERROR_TYPE]: error.type } : attributes,
    ...(error ? { error } : {}),
  };
}

/** What one tool call was. */
export interface ToolRun {
  runId: string;
  agent: string;
  toolUseId: string;
  tool: string;
  /** `function` for Stepwise's own tools, `extension` for MCP and Lambda tools, `agent` for a call of another agent. */
  type: string;
  startTime: Date;
  endTime: Date;
  isError: boolean;
  /** The result's text, for an error's message (and as content with the capture setting on). */
  output: string;
  input: unknown;
}

/** `execute_tool <tool>`: one tool call, a child of its agent's span; a tool error is recorded as the span's error. */
export function toolSpan(trace: RunTrace, run: ToolRun, captureContent: boolean): SpanRecord {
  const error = run.isError ? { type: 'ToolError', message: run.output.slice(0, 1_000) } : undefined;
  return {
    name: `${GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${run.tool}`,
    traceId: trace.traceId,
    spanId: toolSpanId(trace, run.runId, run.toolUseId),
    parentSpanId: agentSpanId(trace, run.runId, run.agent),
    kind: 'internal',
    startTime: run.startTime,
    endTime: run.endTime,
    attributes: {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
      [ATTR_GEN_AI_TOOL_NAME]: run.tool,
      [ATTR_GEN_AI_TOOL_CALL_ID]: run.toolUseId,
      [ATTR_GEN_AI_TOOL_TYPE]: run.type,
      [ATTR_GEN_AI_AGENT_NAME]: run.agent,
      [runIdAttribute]: run.runId,
      ...(error ? { [ATTR_ERROR_TYPE]: error.type } : {}),
      ...(captureContent ? { [ATTR_GEN_AI_TOOL_CALL_ARGUMENTS]: content(run.input), [ATTR_GEN_AI_TOOL_CALL_RESULT]: content(run.output) } : {}),
    },
    ...(error ? { error } : {}),
  };
}

/** What one agent's part of a run was. */
export interface AgentPart {
  runId: string;
  /** The agent's place in the run (its conversation). */
  agent: string;
  /** The definition it follows, when the run recorded one. */
  definition?: { name: string; version: string };
  conversationId: string;
  provider: string;
  startTime: Date;
  endTime: Date;
  usage?: Usage;
  error?: { type: string; message: string };
}

/** `invoke_agent <agent>`: an agent's part of the run, a child of the run's span. */
export function agentSpan(trace: RunTrace, part: AgentPart): SpanRecord {
  const name = part.definition?.name ?? part.agent;
  return {
    name: `${GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT} ${name}`,
    traceId: trace.traceId,
    spanId: agentSpanId(trace, part.runId, part.agent),
    parentSpanId: trace.spanId,
    kind: 'internal',
    startTime: part.startTime,
    endTime: part.endTime,
    attributes: {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
      [ATTR_GEN_AI_PROVIDER_NAME]: part.provider,
      [ATTR_GEN_AI_AGENT_NAME]: name,
      ...(part.definition ? { [ATTR_GEN_AI_AGENT_VERSION]: part.definition.version } : {}),
      [ATTR_GEN_AI_CONVERSATION_ID]: part.conversationId,
      [runIdAttribute]: part.runId,
      ...(part.usage ? usageAttributes(part.usage) : {}),
      ...(part.error ? { [ATTR_ERROR_TYPE]: part.error.type } : {}),
    },
    ...(part.error ? { error: part.error } : {}),
  };
}

/** What the run was, once it ended. */
export interface RunWhole {
  runId: string;
  /** The workflow or agent the run was started with. */
  name: string;
  status: string;
  startTime: Date;
  endTime: Date;
  usage: Usage;
  error?: { type: string; message: string };
}

/** `invoke_workflow <name>`: the run, the root of its spans (a child of the caller's span when it sent a `traceparent`). */
export function runSpan(trace: RunTrace, run: RunWhole): SpanRecord {
  return {
    name: `${GEN_AI_OPERATION_NAME_VALUE_INVOKE_WORKFLOW} ${run.name}`,
    traceId: trace.traceId,
    spanId: trace.spanId,
    ...(trace.parentSpanId ? { parentSpanId: trace.parentSpanId } : {}),
    kind: 'internal',
    startTime: run.startTime,
    endTime: run.endTime,
    attributes: {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_WORKFLOW,
      [ATTR_GEN_AI_WORKFLOW_NAME]: run.name,
      [runIdAttribute]: run.runId,
      'stepwise.run.status': run.status,
      ...usageAttributes(run.usage),
      ...(run.error ? { [ATTR_ERROR_TYPE]: run.error.type } : {}),
    },
    ...(run.error ? { error: run.error } : {}),
  };
}
