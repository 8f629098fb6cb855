/** The memory panel of a run: what the run read from and wrote to its long-term memory. */
import { memoryActivity } from '../memory.js';
import type { Transcript } from '../transcript.js';

export function MemoryPanel({ t }: { t: Transcript }) {
  const activity = memoryActivity(t.sections);
  if (!activity.length) return null;
  return (
    <section class="panel memory-panel" aria-labelledby="memory-heading">
      <h2 id="memory-heading">Memory</h2>
      <ul>
        {activity.map((a) => (
          <li key={a.id}>
            <span class={`memory-${a.kind}`}>{a.kind === 'read' ? 'read' : 'wrote'}</span> <code>{a.command}</code> {a.path}
            {a.outcome === 'error' ? ' (failed)' : a.outcome === 'pending' ? ' …' : ''}
          </li>
        ))}
      </ul>
    </section>
  );
}
