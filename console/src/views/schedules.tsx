/** `/console/schedules`: the caller's schedules with their state, next and last run, and pause, resume and delete (docs/schedules.md). */
import { useCallback, useState } from 'preact/hooks';
import type { ApiClient } from '../api.js';
import { type ScheduleLine, actionsOf, stateText, whenText } from '../schedules.js';
import { ErrorNote, Link, formatTime, runHref, useInterval } from './common.js';

export function SchedulesPage({ api }: { api: ApiClient }) {
  const [items, setItems] = useState<ScheduleLine[] | undefined>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState<string | undefined>();

  const load = useCallback(() => {
    api
      .listSchedules()
      .then((page) => {
        setItems(page.items);
        setError(undefined);
      })
      .catch(setError);
  }, [api]);
  useInterval(load, 5_000, [load]);

  const act = async (schedule: ScheduleLine, action: 'pause' | 'resume' | 'delete') => {
    if (action === 'delete' && !confirm(`Delete the schedule "${schedule.name}"? Runs it started go on.`)) return;
    setBusy(schedule.scheduleId);
    try {
      if (action === 'delete') await api.deleteSchedule(schedule.scheduleId);
      else await api.setScheduleState(schedule.scheduleId, action);
      load();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <>
      <h1 tabIndex={-1}>Schedules</h1>
      <section class="panel" aria-labelledby="schedules-heading">
        <div class="panel-head">
          <h2 id="schedules-heading">Your schedules</h2>
        </div>
        <ErrorNote error={error} />
        {items === undefined && !error && <p aria-live="polite">Loading…</p>}
        {items !== undefined && items.length === 0 && (
          <p>
            No schedules yet. Create one with <code>POST /schedules</code> or <code>stepwise schedules create</code>.
          </p>
        )}
        {items !== undefined && items.length > 0 && (
          <table class="runs">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">When</th>
                <th scope="col">State</th>
                <th scope="col">Next run</th>
                <th scope="col">Last run</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => (
                <tr key={s.scheduleId}>
                  <td data-label="Name">{s.name}</td>
                  <td data-label="When">
                    <code>{whenText(s)}</code>
                  </td>
                  <td data-label="State">{stateText(s)}</td>
                  <td data-label="Next run">{s.nextRunAt ? formatTime(s.nextRunAt) : '—'}</td>
                  <td data-label="Last run">{s.lastRunId ? <Link href={runHref(s.lastRunId)}>{s.lastRunId}</Link> : '—'}</td>
                  <td data-label="Actions">
                    {actionsOf(s).map(({ action, label }) => (
                      <button key={action} type="button" aria-label={label} disabled={busy === s.scheduleId} onClick={() => void act(s, action)}>
                        {action[0]?.toUpperCase()}
                        {action.slice(1)}
                      </button>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
