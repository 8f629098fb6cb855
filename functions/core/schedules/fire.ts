/**
 * A schedule firing, as the intake meets it: a `Stepwise Run Requested` event whose detail names
 * the schedule (`scheduleId`) and its owner (`onBehalfOf`, from the trusted schedules source).
 * The schedule must still exist and be enabled, and with `overlap: "skip"` its previous run must
 * have ended; the run it starts is claimed on the schedule first, so two firings cannot both pass.
 */
import type { Owner } from '../callers/types.js';
import { startGraceSeconds } from '../intake/create.js';
import { runRequestedDetailType } from '../intake/request.js';
import { type Schedule, type ScheduleStore, scheduleSource } from './types.js';

/** What the intake does with a firing: start the run, skip it (counted on the schedule), or refuse it (dead letters). */
export type Admission = { admit: true } | { admit: false; skipped: true; reason: string } | { admit: false; skipped: false; reason: string };

export interface FiringDeps {
  schedules: ScheduleStore;
  /** Whether a run still runs (`undefined`: no record yet, its intake under way, which counts as running). */
  isRunning: (runId: string) => Promise<boolean | undefined>;
  clock?: () => Date;
}

/** Decides whether the firing of `scheduleId` for `owner` starts run `runId`. */
export async function admitFiring(owner: Owner, scheduleId: string, runId: string, deps: FiringDeps): Promise<Admission> {
  const now = (deps.clock ?? (() => new Date()))();
  const schedule = await deps.schedules.get(owner, scheduleId);
  if (!schedule) return { admit: false, skipped: false, reason: `No schedule ${scheduleId} of this owner: it was deleted, or never was.` };
  // A redelivered firing whose run was claimed already goes on: starting that run again starts it once.
  if (schedule.lastRunId === runId) return { admit: true };
  if (schedule.state !== 'enabled') return { admit: false, skipped: true, reason: `Schedule ${scheduleId} is paused.` };
  if (schedule.overlap === 'skip' && (await previousRunRunning(schedule, now, deps))) return skip(schedule, now, deps);
  if (await deps.schedules.claimRun(schedule, runId, schedule.lastRunId, now)) return { admit: true };
  // Another firing claimed the schedule meanwhile: with skip, this one waits for the next firing.
  const again = await deps.schedules.get(owner, scheduleId);
  if (again?.lastRunId === runId) return { admit: true };
  if (!again) return { admit: false, skipped: false, reason: `No schedule ${scheduleId} of this owner: it was deleted.` };
  if (again.overlap === 'skip') return skip(again, now, deps);
  return (await deps.schedules.claimRun(again, runId, again.lastRunId, now)) ? { admit: true } : skip(again, now, deps);
}

/**
 * Whether the schedule's last run still runs. A run claimed but never created (its firing was
 * refused after the claim) stops counting after the intake's grace period, so it never blocks the
 * schedule for good.
 */
async function previousRunRunning(schedule: Schedule, now: Date, deps: FiringDeps): Promise<boolean> {
  if (!schedule.lastRunId) return false;
  const running = await deps.isRunning(schedule.lastRunId);
  if (running !== undefined) return running;
  return Date.parse(schedule.lastRunAt ?? '') > now.getTime() - startGraceSeconds * 1000;
}

async function skip(schedule: Schedule, now: Date, deps: FiringDeps): Promise<Admission> {
  await deps.schedules.recordSkip(schedule, now);
  return { admit: false, skipped: true, reason: `Schedule ${schedule.scheduleId} skipped a firing: its run ${schedule.lastRunId ?? ''} still runs (overlap: skip).` };
}

/** The detail of the run request a schedule fires: its run body, the schedule's id, and its owner, whom the schedules source may name. */
export function firingDetail(schedule: Schedule): Record<string, unknown> {
  return { ...schedule.run, scheduleId: schedule.scheduleId, onBehalfOf: schedule.owner };
}

/** The PutEvents entry of a firing, without a bus (the trigger names it). */
export function firingEntry(schedule: Schedule): { Source: string; DetailType: string; Detail: string } {
  return { Source: scheduleSource, DetailType: runRequestedDetailType, Detail: JSON.stringify(firingDetail(schedule)) };
}
