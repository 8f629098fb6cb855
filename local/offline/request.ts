/**
 * What the offline model reads of a Messages API request: the run's opening (its goal, or for
 * the Coder the goal and the plan), the tools it is offered, and what its earlier calls in this
 * run returned. Pure: the request alone says where the run is, as `scriptPosition` reads it, so
 * runs side by side and retried steps each get the answer that fits them.
 */
import { openingIndex } from '../../functions/adapters/model/scripted.js';
import { finalAnswerNudge } from '../../functions/core/output/answer.js';
import { summaryInstruction } from '../../functions/core/compaction/context.js';

/** A Messages API request, as far as the offline model reads it. */
export interface OfflineRequest {
  system?: unknown;
  tools?: readonly unknown[];
  messages: readonly { role: string; content: unknown }[];
}

/** A tool the request offers. */
export interface OfferedTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** One earlier call of this run and its result. */
export interface Observation {
  name: string;
  input: Record<string, unknown>;
  result: string;
  isError: boolean;
}

/** A request read for the offline model. */
export interface Reading {
  /** The text of the message that opened this run's part of the conversation. */
  opening: string;
  tools: Map<string, OfferedTool>;
  /** The run's calls so far, in order, each with its result (calls without one are left out). */
  observations: Observation[];
  /** Assistant turns of this run so far. */
  turns: number;
  /** The last user message asks for a summary of the conversation (compaction). */
  summaryAsked: boolean;
  /** The last user message asks for the final answer through `final_answer`. */
  answerAsked: boolean;
  /** Text of the model's answers in earlier runs of the conversation (a session's), newest last. */
  earlierAnswers: string[];
}

/** Reads a request: where the run is and what it has seen. */
export function readRequest(request: OfflineRequest): Reading {
  const { messages } = request;
  const start = openingIndex(messages);
  const mine = messages.slice(start + 1);
  const results = new Map<string, { content: string; isError: boolean }>();
  for (const message of mine) {
    for (const block of blocks(message.content)) {
      if (block.type === 'tool_result' && typeof block.tool_use_id === 'string') {
        results.set(block.tool_use_id, { content: resultText(block.content), isError: block.is_error === true });
      }
    }
  }
  const observations: Observation[] = [];
  for (const message of mine) {
    if (message.role !== 'assistant') continue;
    for (const block of blocks(message.content)) {
      if (block.type !== 'tool_use' || typeof block.id !== 'string' || typeof block.name !== 'string') continue;
      const result = results.get(block.id);
      if (!result) continue;
      observations.push({ name: block.name, input: isRecord(block.input) ? block.input : {}, result: result.content, isError: result.isError });
    }
  }
  const lastUser = messages.findLast((m) => m.role === 'user');
  const lastText = lastUser ? textOf(lastUser.content) : '';
  return {
    opening: start >= 0 ? textOf(messages[start]?.content) : '',
    tools: offeredTools(request.tools ?? []),
    observations,
    turns: mine.filter((m) => m.role === 'assistant').length,
    summaryAsked: lastText.includes(summaryInstruction),
    answerAsked: lastText.includes(finalAnswerNudge),
    earlierAnswers: messages
      .slice(0, Math.max(start, 0))
      .filter((m) => m.role === 'assistant')
      .map((m) => textOf(m.content))
      .filter(Boolean),
  };
}

/** The tools of a request, by name. */
function offeredTools(tools: readonly unknown[]): Map<string, OfferedTool> {
  const offered = new Map<string, OfferedTool>();
  for (const tool of tools) {
    if (!isRecord(tool) || typeof tool.name !== 'string') continue;
    offered.set(tool.name, {
      name: tool.name,
      description: typeof tool.description === 'string' ? tool.description : '',
      inputSchema: isRecord(tool.input_schema) ? tool.input_schema : {},
    });
  }
  return offered;
}

type Block = Record<string, unknown> & { type?: unknown };

function blocks(content: unknown): Block[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.filter(isRecord) : [];
}

/** The text blocks of a message's content, joined. */
function textOf(content: unknown): string {
  return blocks(content)
    .filter((b) => b.type === 'text' && typeof b.text === 'string')
    .map((b) => String(b.text))
    .join('\n');
}

function resultText(content: unknown): string {
  return typeof content === 'string' ? content : textOf(content);
}

/** Whether a value is a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
