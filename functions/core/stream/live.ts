/**
 * Live attempts in the stream: the events of an attempt's chunks, and how a stored message
 * continues the attempt it came from.
 */
import { type AGUIEvent } from '@ag-ui/core';
import { completeJson } from './json-prefix.js';
import type { LiveAttempt } from '../live/types.js';
import { isText, isToolUse } from '../model/messages.js';
import { type MessageIds, textContent, textEnd, textStart, toolArgs, toolEnd, toolStart } from './agui.js';
import type { StreamMessage } from './types.js';

// ---------------------------------------------------------------------------------------------
// Live attempts
// ---------------------------------------------------------------------------------------------

/** A content block that a live attempt opened, and what streamed of it. */
export type OpenBlock =
  | { kind: 'text'; messageId: string; text: string; closed: boolean }
  | { kind: 'tool_use'; id: string; name: string; json: string; closed: boolean };

/** The events of a live attempt's chunks, and the blocks they opened. */
export interface AttemptForm {
  events: AGUIEvent[];
  blocks: Map<number, OpenBlock>;
}

/**
 * The events of an attempt's chunks, in the order they were written: a block starts at its first
 * chunk with something in it (a tool call at its first chunk), and when a later block starts, the
 * blocks before it are complete and end. A chunk that contradicts what came before (an earlier
 * block after a later one, another kind or call id) is ignored.
 */
export function attemptForm(attempt: LiveAttempt, ids: MessageIds): AttemptForm {
  const events: AGUIEvent[] = [];
  const blocks = new Map<number, OpenBlock>();
  let highest = -1;
  let firstText: string | undefined;
  for (const chunk of attempt.chunks) {
    const open = blocks.get(chunk.block);
    if (open) {
      if (open.closed || open.kind !== chunk.kind || (open.kind === 'tool_use' && chunk.kind === 'tool_use' && open.id !== chunk.id)) continue;
    } else {
      if (chunk.block < highest || (chunk.kind === 'text' && chunk.delta === '')) continue;
      closeBlocks(blocks, events);
      highest = chunk.block;
      if (chunk.kind === 'text') {
        const messageId = ids.text(chunk.block);
        firstText ??= messageId;
        blocks.set(chunk.block, { kind: 'text', messageId, text: '', closed: false });
        events.push(textStart(messageId));
      } else {
        blocks.set(chunk.block, { kind: 'tool_use', id: chunk.id, name: chunk.name, json: '', closed: false });
        events.push(toolStart(chunk.id, chunk.name, firstText ?? ids.message));
      }
    }
    const block = blocks.get(chunk.block) as OpenBlock;
    if (chunk.delta === '') continue;
    if (block.kind === 'text') {
      block.text += chunk.delta;
      events.push(textContent(block.messageId, chunk.delta));
    } else {
      block.json += chunk.delta;
      events.push(toolArgs(block.id, chunk.delta));
    }
  }
  return { events, blocks };
}

/** Ends every block still open, in block order. */
export function closeBlocks(blocks: Map<number, OpenBlock>, events: AGUIEvent[]): void {
  for (const index of [...blocks.keys()].sort((a, b) => a - b)) {
    const block = blocks.get(index) as OpenBlock;
    if (block.closed) continue;
    block.closed = true;
    events.push(block.kind === 'text' ? textEnd(block.messageId) : toolEnd(block.id));
  }
}

/**
 * How the stored message completes the attempt, block by block (the rest of each open block),
 * or `undefined` when the stored message is not what the attempt was writing.
 */
export function continuation(form: AttemptForm, message: StreamMessage): Map<number, string> | undefined {
  const rests = new Map<number, string>();
  const lastOpened = Math.max(...form.blocks.keys());
  for (const [index, open] of form.blocks) {
    const block = message.content[index];
    if (open.kind === 'text') {
      if (!block || !isText(block) || !block.text.startsWith(open.text)) return undefined;
      const rest = block.text.slice(open.text.length);
      if (open.closed && rest !== '') return undefined;
      rests.set(index, rest);
      continue;
    }
    if (!block || !isToolUse(block) || block.id !== open.id || block.name !== open.name) return undefined;
    let rest = completeJson(open.json, block.input ?? {});
    // A call cut off by max_tokens keeps the JSON the model wrote; the stored input is what could be read of it.
    if (rest === undefined && message.meta.stopReason === 'max_tokens' && index === lastOpened) rest = '';
    if (rest === undefined || (open.closed && rest !== '')) return undefined;
    rests.set(index, rest);
  }
  return rests;
}
