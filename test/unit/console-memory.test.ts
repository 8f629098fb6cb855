/** The console's memory panel (console/src/memory.ts): the memory calls of a run's transcript, read or written, with their outcome. */
import { describe, expect, it } from 'vitest';
import { memoryActivity } from '../../console/src/memory.js';
import type { Item } from '../../console/src/transcript.js';

const tool = (id: string, name: string, input: unknown, result?: { content: string; isError?: boolean }): Item => ({
  kind: 'tool',
  id,
  name,
  args: typeof input === 'string' ? input : JSON.stringify(input),
  argsDone: true,
  abandoned: false,
  ...(result ? { result } : {}),
});

describe('memoryActivity', () => {
  it('lists memory calls in order as reads or writes with their outcome, leaving out other tools and unfinished input', () => {
    const sections = [
      {
        agent: 'single',
        items: [
          tool('t1', 'memory', { command: 'view', path: '/memories' }, { content: 'Here…' }),
          tool('t2', 'read_file', { path: 'a.md' }, { content: 'A' }),
          tool('t3', 'memory', { command: 'create', path: '/memories/a.md', file_text: 'x' }, { content: 'memory failed: …', isError: true }),
          tool('t4', 'memory', { command: 'rename', old_path: '/memories/a.md', new_path: '/memories/b.md' }),
          tool('t5', 'memory', '{"command":"vi'),
        ],
      },
    ];
    expect(memoryActivity(sections)).toEqual([
      { id: 't1', agent: 'single', command: 'view', path: '/memories', kind: 'read', outcome: 'ok' },
      { id: 't3', agent: 'single', command: 'create', path: '/memories/a.md', kind: 'write', outcome: 'error' },
      { id: 't4', agent: 'single', command: 'rename', path: '/memories/a.md → /memories/b.md', kind: 'write', outcome: 'pending' },
    ]);
  });
});
