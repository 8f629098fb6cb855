/**
 * What a run read from and wrote to its long-term memory (docs/memory.md), derived from its
 * transcript: each call of the `memory` tool with its command, path and outcome.
 */
import type { Section } from './transcript.js';

export interface MemoryActivity {
  id: string;
  agent: string;
  command: string;
  /** The path the call named (`old_path → new_path` for a rename). */
  path: string;
  /** Whether the call showed memory content (`view`) rather than changing it. */
  kind: 'read' | 'write';
  /** Pending until its result arrives. */
  outcome: 'pending' | 'ok' | 'error';
}

const reads = new Set(['view']);

/** The memory calls of a transcript's sections, in order; calls whose input is not JSON yet (still streaming) are left out. */
export function memoryActivity(sections: readonly Pick<Section, 'agent' | 'items'>[]): MemoryActivity[] {
  const found: MemoryActivity[] = [];
  for (const section of sections) {
    for (const item of section.items) {
      if (item.kind !== 'tool' || item.name !== 'memory') continue;
      let input: { command?: unknown; path?: unknown; old_path?: unknown; new_path?: unknown };
      try {
        input = JSON.parse(item.args) as typeof input;
      } catch {
        continue;
      }
      const command = typeof input.command === 'string' ? input.command : '?';
      const path = command === 'rename' ? `${String(input.old_path)} → ${String(input.new_path)}` : String(input.path ?? '');
      found.push({
        id: item.id,
        agent: section.agent,
        command,
        path,
        kind: reads.has(command) ? 'read' : 'write',
        outcome: item.result === undefined ? 'pending' : item.result.isError ? 'error' : 'ok',
      });
    }
  }
  return found;
}
