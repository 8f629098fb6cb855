/**
 * What `POST /schedules` takes and what the schedule routes answer: the run body is checked by the
 * very schema `POST /runs` uses, with the deployment's models, tools and agents.
 */
import * as z from 'zod';
import { createRunBody } from '../intake/request.js';
import type { RunRequestRules } from '../intake/types.js';
import { Owner } from '../callers/types.js';
import { isTimeZone, nextRunOf, parseExpression } from './expression.js';
import { Overlap, type Schedule, ScheduleId, ScheduleState } from './types.js';

/** A schedule expression, refused with what is wrong with it. */
export const ScheduleExpression = z
  .string()
  .max(256)
  .superRefine((text, ctx) => {
    const parsed = parseExpression(text);
    if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.message });
  })
  .meta({ description: 'When it fires, as EventBridge Scheduler reads it: `cron(minutes hours day-of-month month day-of-week year)` or `rate(N minutes|hours|days)`.', example: 'cron(0 9 ? * MON-FRI *)' });

export const TimeZone = z
  .string()
  .refine(isTimeZone, 'must be an IANA time zone name, e.g. Europe/Berlin')
  .meta({ description: 'The IANA time zone a cron expression is read in.', example: 'Europe/Berlin' });

/** The body of `POST /schedules`, the run checked as `POST /runs` checks it. */
export function createScheduleBody(rules: RunRequestRules = {}) {
  return z
    .object({
      name: z.string().trim().min(1, 'must not be empty').max(128),
      schedule: ScheduleExpression,
      timezone: TimeZone.default('UTC'),
      overlap: Overlap.default('skip').meta({ description: '`skip`: a firing while the previous run of the schedule still runs starts nothing (and is counted); `allow`: it starts another.' }),
      run: createRunBody(rules).meta({ description: 'The `POST /runs` body each firing starts.' }),
    })
    .strict();
}

export type CreateScheduleBody = z.infer<ReturnType<typeof createScheduleBody>>;

/** A schedule as the routes answer it. */
export const ScheduleView = z
  .object({
    scheduleId: ScheduleId,
    name: z.string(),
    schedule: z.string(),
    timezone: z.string(),
    overlap: Overlap,
    state: ScheduleState,
    nextRunAt: z.string().optional().meta({ description: 'When it fires next (absent while paused, or when it never fires again).' }),
    run: z.record(z.string(), z.unknown()),
    owner: Owner,
    createdAt: z.string(),
    updatedAt: z.string(),
    lastRunId: z.string().optional(),
    lastRunAt: z.string().optional(),
    skipped: z.number().int().nonnegative().optional(),
    lastSkippedAt: z.string().optional(),
  })
  .meta({ id: 'Schedule' });
export type ScheduleView = z.infer<typeof ScheduleView>;

export const SchedulesPage = z.object({ items: z.array(ScheduleView) }).meta({ id: 'SchedulesPage', description: 'Schedules, oldest first.' });

export const SchedulesQuery = z
  .object({ scope: z.enum(['mine', 'tenant']).default('mine').meta({ description: '`tenant`: every schedule of your tenant (admins).' }) })
  .strict();

/** A stored schedule as the routes show it, with its next firing after `now`. */
export function viewOf(schedule: Schedule, now: Date): ScheduleView {
  const next = schedule.state === 'enabled' ? nextRunOf(schedule, now) : undefined;
  return { ...schedule, ...(next ? { nextRunAt: next.toISOString() } : {}) };
}
