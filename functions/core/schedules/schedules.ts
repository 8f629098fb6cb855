/**
 * Creating, reading, pausing, resuming and deleting schedules for a caller (docs/schedules.md).
 * A schedule is its owner's: anyone else but an admin of its tenant is answered as if it did not
 * exist (404), the same as for runs (docs/callers-and-security.md, "Callers and owners").
 */
import { holds, owns } from '../callers/access.js';
import { type Caller, Forbidden, Owner } from '../callers/types.js';
import type { CreateScheduleBody } from './request.js';
import { type Schedule, ScheduleNotFound, type ScheduleState, type ScheduleStore, type ScheduleTrigger, TooManySchedules, defaultMaxSchedulesPerCaller } from './types.js';

export interface ScheduleDeps {
  schedules: ScheduleStore;
  trigger: ScheduleTrigger;
  newId: () => string;
  clock?: () => Date;
  /** The most schedules one owner may have. @default 100 */
  maxSchedulesPerCaller?: number;
}

/** Creates a schedule owned by the caller and its trigger; nothing is left behind when the trigger cannot be made. */
export async function createSchedule(body: CreateScheduleBody, caller: Caller, deps: ScheduleDeps): Promise<Schedule> {
  const now = (deps.clock ?? (() => new Date()))().toISOString();
  const limit = deps.maxSchedulesPerCaller ?? defaultMaxSchedulesPerCaller;
  const schedule: Schedule = {
    scheduleId: `sch-${deps.newId()}`,
    name: body.name,
    schedule: body.schedule,
    timezone: body.timezone,
    overlap: body.overlap,
    state: 'enabled',
    run: body.run,
    owner: Owner.parse({ principal: caller.principal, tenant: caller.tenant }),
    createdAt: now,
    updatedAt: now,
  };
  if (!(await deps.schedules.create(schedule, limit))) {
    throw new TooManySchedules(`You have ${limit} schedules, the most this deployment allows; delete one first.`);
  }
  try {
    await deps.trigger.create(schedule);
  } catch (error) {
    await deps.schedules.delete(schedule);
    throw error;
  }
  return schedule;
}

/** The schedule with that id, if the caller owns it or is an admin of its tenant; else `ScheduleNotFound`. */
export async function scheduleFor(caller: Caller, scheduleId: string, deps: Pick<ScheduleDeps, 'schedules'>): Promise<Schedule> {
  const own = await deps.schedules.get(caller, scheduleId);
  const found = own ?? (holds(caller, 'admin') ? await deps.schedules.find(caller.tenant, scheduleId) : undefined);
  if (!found || !(owns(caller, found.owner) || (holds(caller, 'admin') && found.owner.tenant === caller.tenant))) {
    throw new ScheduleNotFound(`No schedule ${scheduleId}.`);
  }
  return found;
}

/** The caller's schedules, or (admins, `tenant`) every schedule of its tenant. */
export async function listSchedules(caller: Caller, scope: 'mine' | 'tenant', deps: Pick<ScheduleDeps, 'schedules'>): Promise<Schedule[]> {
  if (scope === 'tenant' && !holds(caller, 'admin')) throw new Forbidden("Listing a tenant's schedules needs the admin role.");
  return deps.schedules.list(scope === 'tenant' ? { tenant: caller.tenant } : { owner: caller });
}

/** Pauses or resumes a schedule the caller may change: the record first, which the intake also reads, then its trigger. */
export async function setScheduleState(caller: Caller, scheduleId: string, state: ScheduleState, deps: ScheduleDeps): Promise<Schedule> {
  const schedule = await scheduleFor(caller, scheduleId, deps);
  const updated = await deps.schedules.setState(schedule, state, (deps.clock ?? (() => new Date()))());
  if (!updated) throw new ScheduleNotFound(`No schedule ${scheduleId}.`);
  await deps.trigger.setState(updated);
  return updated;
}

/** Deletes a schedule the caller may change: its trigger first, so it fires no more, then the record. */
export async function deleteSchedule(caller: Caller, scheduleId: string, deps: ScheduleDeps): Promise<void> {
  const schedule = await scheduleFor(caller, scheduleId, deps);
  await deps.trigger.remove(schedule);
  await deps.schedules.delete(schedule);
}
