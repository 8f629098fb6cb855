/**
 * Schedules (docs/schedules.md): runs started on a cron or rate expression, owned by the caller
 * that created the schedule. The record, the store and the trigger ports, and the errors.
 */
import * as z from 'zod';
import { Owner } from '../callers/types.js';
import { named } from '../errors/errors.js';

/** The `source` of the run requests a schedule fires: trusted to name the schedule's owner (`onBehalfOf`). */
export const scheduleSource = 'stepwise.schedules';

/** The most schedules one owner may have, unless the deployment says otherwise. */
export const defaultMaxSchedulesPerCaller = 100;

/** A schedule's id: also the EventBridge Scheduler schedule's name (1-64 of `[0-9a-zA-Z-_.]`). */
export const ScheduleId = z
  .string()
  .regex(/^sch-[A-Za-z0-9-]{1,60}$/, 'must be a schedule id that POST /schedules returned')
  .meta({ description: 'The id POST /schedules returned.', example: 'sch-51d1d0ba-0484-43bf-8faf-feb9881e5080' });

export const ScheduleState = z.enum(['enabled', 'paused']);
export type ScheduleState = z.infer<typeof ScheduleState>;

/** What a schedule does when it fires while its previous run still runs. */
export const Overlap = z.enum(['skip', 'allow']);
export type Overlap = z.infer<typeof Overlap>;

/** A schedule as it is stored. */
export const Schedule = z
  .object({
    scheduleId: ScheduleId,
    name: z.string(),
    /** `cron(…)` or `rate(…)`, as EventBridge Scheduler reads it. */
    schedule: z.string(),
    /** The IANA time zone a cron expression is read in. */
    timezone: z.string(),
    overlap: Overlap,
    state: ScheduleState,
    /** The `POST /runs` body each firing starts, as validated when the schedule was created. */
    run: z.record(z.string(), z.unknown()),
    owner: Owner,
    createdAt: z.string(),
    updatedAt: z.string(),
    /** The run the schedule started last, and when. */
    lastRunId: z.string().optional(),
    lastRunAt: z.string().optional(),
    /** Firings skipped because the previous run still ran (`overlap: "skip"`), and the last one's time. */
    skipped: z.number().int().nonnegative().optional(),
    lastSkippedAt: z.string().optional(),
  })
  .meta({ id: 'ScheduleRecord' });
export type Schedule = z.infer<typeof Schedule>;

/** Whose schedules to list: one owner's, or every one of a tenant's (admins). */
export type ScheduleScope = { owner: Owner } | { tenant: string | undefined };

/** Where schedules are kept. */
export interface ScheduleStore {
  /** Stores a new schedule unless its owner has `limit` already; `false` then. */
  create(schedule: Schedule, limit: number): Promise<boolean>;
  /** The schedule of that owner with that id. */
  get(owner: Owner, scheduleId: string): Promise<Schedule | undefined>;
  /** The schedule with that id in a tenant, whoever owns it (an admin's look-up). */
  find(tenant: string | undefined, scheduleId: string): Promise<Schedule | undefined>;
  /** The schedules of an owner or a tenant, oldest first. */
  list(scope: ScheduleScope): Promise<Schedule[]>;
  /** Sets the state; the schedule after, or `undefined` when it is gone. */
  setState(schedule: Schedule, state: ScheduleState, now: Date): Promise<Schedule | undefined>;
  delete(schedule: Schedule): Promise<void>;
  /**
   * Makes `runId` the schedule's last run if its last run is still `expected` (none: `undefined`),
   * so two firings cannot both pass the overlap check. `false` when another run got there first or
   * the schedule is gone.
   */
  claimRun(schedule: Schedule, runId: string, expected: string | undefined, now: Date): Promise<boolean>;
  /** Counts a firing skipped for overlap. */
  recordSkip(schedule: Schedule, now: Date): Promise<void>;
}

/** What fires schedules: EventBridge Scheduler deployed, the dev runtime's timer locally. */
export interface ScheduleTrigger {
  /** Creates the trigger of a new schedule (enabled). */
  create(schedule: Schedule): Promise<void>;
  /** Pauses or resumes it, as the schedule's `state` says. */
  setState(schedule: Schedule): Promise<void>;
  /** Removes it; nothing when it is gone already. */
  remove(schedule: Schedule): Promise<void>;
}

/** No schedule with that id that the caller may see (404), the same answer as a missing one. */
export class ScheduleNotFound extends named('ScheduleNotFound') {}

/** The owner has as many schedules as the deployment allows (429). */
export class TooManySchedules extends named('TooManySchedules') {}
