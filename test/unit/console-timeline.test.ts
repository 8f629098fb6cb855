/** The console's timeline: the waterfall rows of a run's agents, model calls and tool calls (console/src/timeline.ts). */
import { describe, expect, it } from 'vitest';
import { type TimelineMessage, formatDuration, timelineOf } from '../../console/src/timeline.js';

const at = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + ms).toISOString();
const usage = (input: number, output: number) => ({ inputTokens: input, outputTokens: output });

describe('timelineOf', () => {
  it('lays out each agent, then its model calls and the tool calls of each turn, from the first call', () => {
    const messages: TimelineMessage[] = [
      { seq: 0, agent: 'architect', role: 'user', content: [{ type: 'text' }] },
      { seq: 1, agent: 'architect', role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'finish_plan' }], call: { startedAt: at(0), ms: 1_000, model: 'claude-x', usage: usage(100, 20) } },
      { seq: 0, agent: 'coder', role: 'user', content: [{ type: 'text' }] },
      {
        seq: 1,
        agent: 'coder',
        role: 'assistant',
        content: [{ type: 'text' }, { type: 'tool_use', id: 't2', name: 'write_file' }, { type: 'tool_use', id: 't3', name: 'list_files' }],
        call: { startedAt: at(1_500), ms: 500, model: 'claude-x', usage: usage(200, 30) },
      },
      { seq: 2, agent: 'coder', role: 'user', content: [{ type: 'tool_result' }] },
      { seq: 3, agent: 'coder', role: 'assistant', content: [{ type: 'text' }], call: { startedAt: at(2_600), ms: 400, model: 'claude-x', usage: usage(300, 40) } },
    ];
    expect(timelineOf(messages)).toEqual({
      total: 3_000,
      rows: [
        { kind: 'agent', key: 'architect-agent', label: 'architect', agent: 'architect', start: 0, duration: 1_000, tokens: { input: 100, output: 20 } },
        { kind: 'chat', key: 'architect-chat-1', label: 'claude-x', agent: 'architect', start: 0, duration: 1_000, tokens: { input: 100, output: 20 } },
        { kind: 'tool', key: 'architect-tool-t1', label: 'finish_plan', agent: 'architect', start: 1_000, duration: 0 },
        { kind: 'agent', key: 'coder-agent', label: 'coder', agent: 'coder', start: 1_500, duration: 1_500, tokens: { input: 500, output: 70 } },
        { kind: 'chat', key: 'coder-chat-1', label: 'claude-x', agent: 'coder', start: 1_500, duration: 500, tokens: { input: 200, output: 30 } },
        { kind: 'tool', key: 'coder-tool-t2', label: 'write_file', agent: 'coder', start: 2_000, duration: 600 },
        { kind: 'tool', key: 'coder-tool-t3', label: 'list_files', agent: 'coder', start: 2_000, duration: 600 },
        { kind: 'chat', key: 'coder-chat-3', label: 'claude-x', agent: 'coder', start: 2_600, duration: 400, tokens: { input: 300, output: 40 } },
      ],
    });
  });

  it('shows nothing for a transcript without timed answers (runs made before answers were timed)', () => {
    expect(timelineOf([{ seq: 1, agent: 'single', role: 'assistant', content: [{ type: 'text' }] }])).toEqual({ rows: [], total: 0 });
  });

  it('says durations as people read them', () => {
    expect([850, 2_400, 185_000].map(formatDuration)).toEqual(['850 ms', '2.4 s', '3 min 5 s']);
  });
});
