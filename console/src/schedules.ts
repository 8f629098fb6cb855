/** What the schedules page shows of a schedule, as plain text (no DOM: the unit tests run it on Node). */

/** The fields of a schedule the page shows. */
export interface ScheduleLine {
  scheduleId: string;
  name: string;
  schedule: string;
  timezone: string;
  state: 'enabled' | 'paused';
  nextRunAt?: string | undefined;
  lastRunId?: string | undefined;
  skipped?: number | undefined;
}

/** When it fires, in words: the expression with its zone unless UTC. */
export function whenText(s: Pick<ScheduleLine, 'schedule' | 'timezone'>): string {
  return s.timezone === 'UTC' ? s.schedule : `${s.schedule} (${s.timezone})`;
}

/** Its state in words (never in colour alone), with the skipped firings when there are some. */
export function stateText(s: Pick<ScheduleLine, 'state' | 'skipped'>): string {
  const state = s.state === 'enabled' ? 'Enabled' : 'Paused';
  return s.skipped ? `${state} · ${s.skipped} skipped` : state;
}

/** The buttons of a schedule, each with an accessible name that says what it does to which schedule. */
export function actionsOf(s: Pick<ScheduleLine, 'state' | 'name'>): { action: 'pause' | 'resume' | 'delete'; label: string }[] {
  return [
    s.state === 'enabled' ? { action: 'pause' as const, label: `Pause ${s.name}` } : { action: 'resume' as const, label: `Resume ${s.name}` },
    { action: 'delete' as const, label: `Delete ${s.name}` },
  ];
}
