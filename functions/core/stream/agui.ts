/**
 * The AG-UI events the stream carries, and the ids of a message's events.
 */
import {
  type AGUIEvent,
  type CustomEvent,
  EventType,
  type TextMessageContentEvent,
  type TextMessageEndEvent,
  type TextMessageStartEvent,
  type ToolCallArgsEvent,
  type ToolCallEndEvent,
  type ToolCallStartEvent,
} from '@ag-ui/core';
import type { AgentName } from '../agents/types.js';
import { type Run } from '../runs/types.js';
import { encodeCursor } from './cursor.js';
import type { Group, PositionedEvent } from './types.js';

// ---------------------------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------------------------

/** The ids a message's events carry: text messages per block, and the assistant message as a whole. */
export interface MessageIds {
  /** The assistant message: the parent of its tool calls when no text block comes before them. */
  message: string;
  text(block: number): string;
}

/**
 * `<runId>:<agent>:<seq>` (`:<block>` for a text block): the first live attempt of a message, and
 * the stored message when it continues that attempt or nothing streamed. A later attempt (a
 * retried model call) appends its attempt (`:<block>:<attempt>`), and the stored message carries
 * the ids of the attempt it continues; a stored message that continues none after attempts were
 * streamed appends `:final`.
 */
export function idsOf(run: Run, agent: AgentName, seq: number, suffix?: string): MessageIds {
  const base = `${run.runId}:${agent}:${seq}`;
  return suffix === undefined
    ? { message: base, text: (block) => `${base}:${block}` }
    : { message: `${base}:${suffix}`, text: (block) => `${base}:${block}:${suffix}` };
}

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

export function custom(name: string, value: Record<string, unknown>): CustomEvent {
  return { type: EventType.CUSTOM, name: `stepwise.${name}`, value };
}

export function textStart(messageId: string): TextMessageStartEvent {
  return { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' };
}

export function textContent(messageId: string, delta: string): TextMessageContentEvent {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta };
}

export function textEnd(messageId: string): TextMessageEndEvent {
  return { type: EventType.TEXT_MESSAGE_END, messageId };
}

export function toolStart(toolCallId: string, toolCallName: string, parentMessageId: string): ToolCallStartEvent {
  return { type: EventType.TOOL_CALL_START, toolCallId, toolCallName, parentMessageId };
}

export function toolArgs(toolCallId: string, delta: string): ToolCallArgsEvent {
  return { type: EventType.TOOL_CALL_ARGS, toolCallId, delta };
}

export function toolEnd(toolCallId: string): ToolCallEndEvent {
  return { type: EventType.TOOL_CALL_END, toolCallId };
}

/** Collects events with their positions, group by group. */
export class Sequence {
  readonly events: PositionedEvent[] = [];

  constructor(private readonly agents: readonly AgentName[]) {}

  group(group: Group): (event: AGUIEvent) => void {
    let n = 0;
    return (event) => {
      this.events.push({ cursor: encodeCursor({ group, n: n++ }, this.agents), event });
    };
  }
}
