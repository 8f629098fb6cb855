/**
 * The run's timeline (docs/console.md, "The timeline"): a waterfall of its agents, model calls and
 * tool calls with their durations and tokens, from the transcript's pages (`timeline.ts`). Read
 * once, again when the run's status changes, and every few seconds while it runs.
 */
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ApiClient } from '../api.js';
import { type Timeline, type TimelineMessage, formatDuration, timelineOf } from '../timeline.js';
import { formatCount } from './common.js';

/** Every page of the run's transcript. */
async function allMessages(api: ApiClient, runId: string): Promise<TimelineMessage[]> {
  const items: TimelineMessage[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.messages(runId, cursor ? { cursor } : {});
    items.push(...(page.items as TimelineMessage[]));
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

export function TimelinePanel({ api, runId, status }: { api: ApiClient; runId: string; status: string }) {
  const [timeline, setTimeline] = useState<Timeline | undefined>();
  const load = useCallback(async () => {
    try {
      setTimeline(timelineOf(await allMessages(api, runId)));
    } catch {
      // The page itself says when the run cannot be read.
    }
  }, [api, runId]);
  useEffect(() => {
    void load();
    if (status !== 'running') return;
    const timer = setInterval(() => document.visibilityState === 'visible' && void load(), 3_000);
    return () => clearInterval(timer);
  }, [load, status]);

  if (!timeline?.rows.length) return null;
  const scale = timeline.total || 1;
  return (
    <section class="panel timeline" aria-labelledby="timeline-heading">
      <h2 id="timeline-heading">Timeline</h2>
      <p class="note">Total {formatDuration(timeline.total)}. A turn’s tool calls run between its answer and the agent’s next model call.</p>
      <ol class="timeline-rows" aria-label="Agents, model calls and tool calls">
        {timeline.rows.map((row) => {
          const tokens = row.tokens ? ` · ${formatCount(row.tokens.input)} in / ${formatCount(row.tokens.output)} out tokens` : '';
          const what = row.kind === 'agent' ? `Agent ${row.label}` : row.kind === 'chat' ? `Model call ${row.label}` : `Tool ${row.label}`;
          return (
            <li key={row.key} class={`timeline-row ${row.kind}`}>
              <span class="timeline-label">{what}</span>
              <span class="timeline-track" aria-hidden="true">
                {/* Set through the CSSOM (allowed by the console's CSP), never as an inline style attribute. */}
                <span class="timeline-bar" style={{ marginLeft: `${(row.start / scale) * 100}%`, width: `max(2px, ${(row.duration / scale) * 100}%)` }} />
              </span>
              <span class="timeline-figures">
                {formatDuration(row.duration)}
                {tokens}
              </span>
            </li>
          );
        })}
      </ol>
    </section>
  );
}
