import { describe, expect, it } from 'vitest';
import { type Compaction, type ConversationRecord } from '../../functions/core/conversation/types.js';
import { assembleConversation, conversationIdOf, loadCall } from '../../functions/core/conversation/conversation.js';
import { StepStateInvalid, StoredDataInvalid } from '../../functions/core/errors/errors.js';
import { ContentBlock } from '../../functions/core/model/messages.js';
import { MemoryConversationStore } from '../support/memory.js';

const meta = { runId: 'run-1', iteration: 0 };
const usage = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
const compaction = (fromSeq: number, atSeq: number): Compaction => ({ fromSeq, atSeq, summary: `from ${fromSeq}`, runId: 'run-1', iteration: 0, usage, model: 'm' });
const call = { type: 'tool_use' as const, id: 't0', name: 'calculator', input: {} };

describe('assembleConversation', () => {
  it('keeps the summary with the latest cut, whatever order the summaries come in', () => {
    const opening: ConversationRecord = { kind: 'message', seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta };
    const older: ConversationRecord = { kind: 'compaction', compaction: compaction(3, 7) };
    const newer: ConversationRecord = { kind: 'compaction', compaction: compaction(5, 9) };
    expect([assembleConversation([opening, older, newer]).compaction, assembleConversation([opening, newer, older]).compaction]).toEqual([
      compaction(5, 9),
      compaction(5, 9),
    ]);
  });

  it('has no pending results when the conversation ends with a user message', () => {
    const opening: ConversationRecord = { kind: 'message', seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta };
    expect(assembleConversation([opening])).toEqual({ messages: [{ seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta }], pendingResults: [] });
  });

  it('has no pending results for a last turn none of whose calls has answered yet', () => {
    const records: ConversationRecord[] = [
      { kind: 'message', seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta },
      { kind: 'message', seq: 1, role: 'assistant', content: [call], meta },
    ];
    expect(assembleConversation(records)).toEqual({
      messages: [
        { seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta },
        { seq: 1, role: 'assistant', content: [call], meta },
      ],
      pendingResults: [],
    });
  });

  it('refuses a message that carries a result no record holds', () => {
    const records: ConversationRecord[] = [
      { kind: 'message', seq: 1, role: 'assistant', content: [call], meta },
      { kind: 'message', seq: 2, role: 'user', content: [], meta, carries: { seq: 1, count: 1 } },
    ];
    expect(() => assembleConversation(records)).toThrow(new StoredDataInvalid('Message 2 carries result 0 of message 1, which is missing.'));
  });
});

describe('conversationIdOf', () => {
  it('names a run’s own conversation per agent, and a session’s per owner, or as before owners for older runs', () => {
    expect([
      conversationIdOf('run-1', 'coder'),
      conversationIdOf('run-1', 'single', 's1', { principal: 'iss#alice' }).startsWith('session/'),
      conversationIdOf('run-1', 'single', 's1'),
    ]).toEqual(['run/run-1/coder', true, 'session/s1']);
  });
});

describe('loadCall', () => {
  it('refuses ids that name a user message', async () => {
    const conversations = new MemoryConversationStore();
    await conversations.append('run/run-1/single', { seq: 0, role: 'user', content: [{ type: 'text', text: 'go' }], meta });
    await expect(loadCall(conversations, { runId: 'run-1', agent: 'single', seq: 0, toolUseId: 't0' })).rejects.toThrow(
      new StepStateInvalid('Message 0 of run/run-1/single is not a stored assistant message.'),
    );
  });
});

describe('ContentBlock', () => {
  it('holds a block of a known type to its own schema, and keeps blocks of other types as received', () => {
    const malformed = ['text', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'].map((type) => ContentBlock.safeParse({ type }).success);
    const other = { type: 'server_tool_use', id: 'srv_1', name: 'web_search', input: { q: 'x' } };
    expect({ malformed, other: ContentBlock.parse(other) }).toEqual({ malformed: [false, false, false, false, false], other });
  });
});
