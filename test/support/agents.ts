/** Builders shared by the agent tests: scripted turns and a core wired to in-memory fakes. */
import { expect } from 'vitest';
import { ScriptedModel, type ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import type { ContentBlock } from '../../functions/core/model/messages.js';
import type { InferenceDeps, ToolDeps } from '../../functions/core/steps/hooks.js';
import { MemoryConversationStore, MemoryRunStore, MemoryWorkspace, newRun } from './memory.js';

export function say(text: string): ScriptedTurn {
  return { content: [{ type: 'text', text }] };
}

export function use(...calls: [id: string, name: string, input: unknown][]): ScriptedTurn {
  const content: ContentBlock[] = calls.map(([id, name, input]) => ({ type: 'tool_use', id, name, input }));
  return { content };
}

/** A core on in-memory fakes, with a run record for `runId`. */
export async function memoryCore(goal = 'Add 2 and 3.', runId = 'run-1') {
  const conversations = new MemoryConversationStore();
  const runs = new MemoryRunStore();
  const workspaces = new Map<string, MemoryWorkspace>();
  const model = new ScriptedModel();
  await runs.create(newRun(runId, goal));
  const deps: InferenceDeps & ToolDeps = {
    conversations,
    runs,
    model,
    settings: { model: 'claude-test', maxTokens: 1024 },
    workspaceFor(id) {
      let w = workspaces.get(id);
      if (!w) workspaces.set(id, (w = new MemoryWorkspace()));
      return w;
    },
  };
  return { conversations, runs, model, workspaces, deps, runId };
}

/** Matches `content` as the tool step marks the output of `source`, an external tool or an agent (`core/untrusted/mark.ts`). */
export function marked(source: string, content: string) {
  const escaped = content.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return expect.stringMatching(new RegExp(`^<untrusted-data-([0-9a-f]{16}) source="${source}">\\n${escaped}\\n</untrusted-data-\\1>$`));
}
