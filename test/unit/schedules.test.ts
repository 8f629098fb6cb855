import { describe, expect, it } from 'vitest';
import { createBody, scheduleRows } from '../../bin/cli/schedules.js';
import { ownerKey } from '../../functions/core/callers/access.js';
import type { Owner } from '../../functions/core/callers/types.js';
import { nextFireTime, parseExpression } from '../../functions/core/schedules/expression.js';
import { admitFiring, firingEntry } from '../../functions/core/schedules/fire.js';
import { createSchedule } from '../../functions/core/schedules/schedules.js';
import type { Schedule, ScheduleScope, ScheduleState, ScheduleStore } from '../../functions/core/schedules/types.js';
import { LocalScheduler } from '../../local/runtime/scheduler.js';
import { actionsOf, stateText, whenText } from '../../console/src/schedules.js';

/** Schedules in memory, keyed by owner and id as the table keys them. */
class MemoryScheduleStore implements ScheduleStore {
  readonly items = new Map<string, Schedule>();
  private key = (owner: Owner, id: string) => `${ownerKey(owner)}#${id}`;
  async create(schedule: Schedule, limit: number) {
    if ([...this.items.values()].filter((s) => ownerKey(s.owner) === ownerKey(schedule.owner)).length >= limit) return false;
    this.items.set(this.key(schedule.owner, schedule.scheduleId), schedule);
    return true;
  }
  async get(owner: Owner, id: string) {
    return this.items.get(this.key(owner, id));
  }
  async find(_tenant: string | undefined, id: string) {
    return [...this.items.values()].find((s) => s.scheduleId === id);
  }
  async list(_scope: ScheduleScope) {
    return [...this.items.values()];
  }
  async setState(schedule: Schedule, state: ScheduleState) {
    const updated = { ...schedule, state };
    this.items.set(this.key(schedule.owner, schedule.scheduleId), updated);
    return updated;
  }
  async delete(schedule: Schedule) {
    this.items.delete(this.key(schedule.owner, schedule.scheduleId));
  }
  async claimRun(schedule: Schedule, runId: string, expected: string | undefined, now: Date) {
    const current = await this.get(schedule.owner, schedule.scheduleId);
    if (!current || current.lastRunId !== expected) return false;
    this.items.set(this.key(schedule.owner, schedule.scheduleId), { ...current, lastRunId: runId, lastRunAt: now.toISOString() });
    return true;
  }
  async recordSkip(schedule: Schedule, now: Date) {
    const current = await this.get(schedule.owner, schedule.scheduleId);
    if (current) this.items.set(this.key(schedule.owner, schedule.scheduleId), { ...current, skipped: (current.skipped ?? 0) + 1, lastSkippedAt: now.toISOString() });
  }
}

const alice: Owner = { principal: 'alice', tenant: 'acme' };
const created = '2026-03-01T08:00:00.000Z';
const schedule = (extra: Partial<Schedule> = {}): Schedule => ({
  scheduleId: 'sch-1',
  name: 'Nightly',
  schedule: 'rate(1 hour)',
  timezone: 'UTC',
  overlap: 'skip',
  state: 'enabled',
  run: { goal: 'Report.', mode: 'single' },
  owner: alice,
  createdAt: created,
  updatedAt: created,
  ...extra,
});

describe('parseExpression', () => {
  it.each([
    'cron(0 9 ? * MON-FRI *)',
    'cron(30 6 1 * ? *)',
    'cron(0/15 * * * ? *)',
    'cron(0 12 L * ? 2026-2030)',
    'cron(0 12 15W * ? *)',
    'cron(0 12 ? * 6#2 *)',
    'cron(0 12 ? * 6L *)',
    'cron(0 8 ? JAN,JUL 2 *)',
    'rate(1 minute)',
    'rate(15 minutes)',
    'rate(1 day)',
  ])('takes %s', (expression) => {
    expect(parseExpression(expression).ok).toBe(true);
  });

  it.each([
    ['cron(0 9 * * * *)', 'use ? in exactly one of day-of-month and day-of-week'],
    ['cron(0 9 ? * ? *)', 'use ? in exactly one of day-of-month and day-of-week'],
    ['cron(0 9 * * ?)', 'a cron expression has 6 fields (minutes hours day-of-month month day-of-week year), not 5'],
    ['cron(60 9 * * ? *)', 'minutes must be 0-59 with , - * /'],
    ['cron(0 24 * * ? *)', 'hours must be 0-23 with , - * /'],
    ['cron(0 9 ? * 8 *)', 'day-of-week must be 1-7 or a name with , - * /'],
    ['cron(0 9 * 13 ? *)', 'month must be 1-12 or a name with , - * /'],
    ['cron(0 9 * * ? 1969)', 'year must be 1970-2199 with , - * /'],
    ['rate(5 minute)', 'write rate(1 minute) for one, rate(5 minutes) for more'],
    ['rate(1 hours)', 'write rate(1 hour) for one, rate(1 hours) for more'],
    ['rate(0 days)', 'a rate must be a positive whole number'],
    ['every 5 minutes', 'must be cron(minutes hours day-of-month month day-of-week year) or rate(N minutes|hours|days)'],
  ])('refuses %s: %s', (expression, message) => {
    expect(parseExpression(expression)).toEqual({ ok: false, message });
  });
});

describe('nextFireTime', () => {
  const parsed = (expression: string) => {
    const result = parseExpression(expression);
    if (!result.ok) throw new Error(result.message);
    return result.parsed;
  };

  it('counts a rate from the creation, never firing at the creation itself', () => {
    const since = new Date(created);
    const next = (after: string) => nextFireTime(parsed('rate(1 hour)'), 'UTC', since, new Date(after))?.toISOString();
    expect([next(created), next('2026-03-01T08:59:59.999Z'), next('2026-03-01T09:00:00.000Z'), next('2026-03-01T11:30:00.000Z')]).toEqual([
      '2026-03-01T09:00:00.000Z',
      '2026-03-01T09:00:00.000Z',
      '2026-03-01T10:00:00.000Z',
      '2026-03-01T12:00:00.000Z',
    ]);
  });

  it('reads a cron in its time zone, across a change to daylight saving time, with 1 as Sunday', () => {
    const next = (expression: string, after: string) => nextFireTime(parsed(expression), 'Europe/Berlin', new Date(created), new Date(after))?.toISOString();
    // 09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC from the last Sunday of March (29 March 2026).
    expect(next('cron(0 9 * * ? *)', '2026-03-28T12:00:00Z')).toBe('2026-03-29T07:00:00.000Z');
    expect(next('cron(0 9 * * ? *)', '2026-03-27T12:00:00Z')).toBe('2026-03-28T08:00:00.000Z');
    expect(next('cron(0 9 ? * 1 *)', '2026-03-23T00:00:00Z')).toBe('2026-03-29T07:00:00.000Z');
    expect(next('cron(0 9 * * ? 2020)', '2026-03-23T00:00:00Z')).toBeUndefined();
  });
});

describe('admitFiring', () => {
  const at = new Date('2026-03-01T10:00:00.000Z');
  const deps = (store: ScheduleStore, running: Record<string, boolean | undefined>) => ({ schedules: store, isRunning: async (id: string) => running[id], clock: () => at });

  it('claims the run on the schedule, and admits a redelivery of the same firing', async () => {
    const store = new MemoryScheduleStore();
    await store.create(schedule(), 100);
    expect(await admitFiring(alice, 'sch-1', 'run-1', deps(store, {}))).toEqual({ admit: true });
    expect((await store.get(alice, 'sch-1'))?.lastRunId).toBe('run-1');
    expect(await admitFiring(alice, 'sch-1', 'run-1', deps(store, { 'run-1': true }))).toEqual({ admit: true });
  });

  it('skips while the last run runs, counting the skip, and starts once it has ended; allow starts anyway', async () => {
    const store = new MemoryScheduleStore();
    await store.create(schedule({ lastRunId: 'run-1', lastRunAt: at.toISOString() }), 100);
    expect(await admitFiring(alice, 'sch-1', 'run-2', deps(store, { 'run-1': true }))).toMatchObject({ admit: false, skipped: true });
    expect(await store.get(alice, 'sch-1')).toMatchObject({ lastRunId: 'run-1', skipped: 1, lastSkippedAt: at.toISOString() });
    expect(await admitFiring(alice, 'sch-1', 'run-3', deps(store, { 'run-1': false }))).toEqual({ admit: true });
    await store.create(schedule({ scheduleId: 'sch-2', overlap: 'allow', lastRunId: 'run-4' }), 100);
    expect(await admitFiring(alice, 'sch-2', 'run-5', deps(store, { 'run-4': true }))).toEqual({ admit: true });
  });

  it('stops counting a claimed run that was never created after the grace period', async () => {
    const store = new MemoryScheduleStore();
    await store.create(schedule({ lastRunId: 'lost', lastRunAt: new Date(at.getTime() - 5 * 60_000).toISOString() }), 100);
    expect(await admitFiring(alice, 'sch-1', 'run-2', deps(store, {}))).toMatchObject({ admit: false, skipped: true });
    await store.create(schedule({ lastRunId: 'lost', lastRunAt: new Date(at.getTime() - 11 * 60_000).toISOString() }), 100);
    expect(await admitFiring(alice, 'sch-1', 'run-2', deps(store, {}))).toEqual({ admit: true });
  });

  it('refuses a paused schedule quietly, and one that is missing or another owner\'s for the dead letters', async () => {
    const store = new MemoryScheduleStore();
    await store.create(schedule({ state: 'paused' }), 100);
    expect(await admitFiring(alice, 'sch-1', 'run-1', deps(store, {}))).toMatchObject({ admit: false, skipped: true });
    expect(await admitFiring({ principal: 'mallory', tenant: 'acme' }, 'sch-1', 'run-1', deps(store, {}))).toMatchObject({ admit: false, skipped: false });
    expect(await admitFiring(alice, 'sch-9', 'run-1', deps(store, {}))).toMatchObject({ admit: false, skipped: false });
  });

  it("puts the run body with the schedule's id and owner, from the schedules source", () => {
    expect(firingEntry(schedule())).toEqual({
      Source: 'stepwise.schedules',
      DetailType: 'Stepwise Run Requested',
      Detail: JSON.stringify({ goal: 'Report.', mode: 'single', scheduleId: 'sch-1', onBehalfOf: alice }),
    });
  });
});

describe('LocalScheduler', () => {
  it('fires a schedule once when its time comes, however late, then at its next time; never while paused or once removed', async () => {
    const fired: string[] = [];
    const scheduler = new LocalScheduler({ manual: true, clock: () => new Date(created), fire: async (entry) => void fired.push(JSON.parse(entry.Detail as string).scheduleId) });
    await scheduler.create(schedule());
    const tick = (iso: string) => scheduler.tick(new Date(iso));
    expect(await tick('2026-03-01T08:59:59Z')).toEqual([]);
    expect(await tick('2026-03-01T11:10:00Z')).toEqual(['sch-1']);
    expect(await tick('2026-03-01T11:59:59Z')).toEqual([]);
    expect(await tick('2026-03-01T12:00:00Z')).toEqual(['sch-1']);
    await scheduler.setState(schedule({ state: 'paused' }));
    expect(await tick('2026-03-01T14:00:00Z')).toEqual([]);
    await scheduler.setState(schedule());
    await scheduler.remove(schedule());
    expect(await tick('2026-03-02T14:00:00Z')).toEqual([]);
    expect(fired).toEqual(['sch-1', 'sch-1']);
  });
});

describe('stepwise schedules', () => {
  it('builds the body from a file with the flags over it', () => {
    const file = { name: 'From file', schedule: 'rate(1 day)', run: { goal: 'Old.', mode: 'single' } };
    expect(createBody(file, { schedule: 'cron(0 9 ? * MON *)', timezone: 'Europe/Berlin', goal: 'New.' })).toEqual({
      name: 'From file',
      schedule: 'cron(0 9 ? * MON *)',
      timezone: 'Europe/Berlin',
      run: { goal: 'New.', mode: 'single' },
    });
  });

  it('lists each schedule with its state, expression, zone unless UTC, next and last run', () => {
    const view = { ...schedule({ timezone: 'Asia/Tokyo', lastRunId: 'run-1' }), nextRunAt: '2026-03-02T00:30:00.000Z' };
    type Row = Parameters<typeof scheduleRows>[0][number];
    expect(scheduleRows([view as Row, schedule({ state: 'paused' }) as Row])).toEqual([
      ['sch-1', 'enabled', 'rate(1 hour) Asia/Tokyo', '2026-03-02T00:30:00.000Z', 'run-1', 'Nightly'],
      ['sch-1', 'paused', 'rate(1 hour)', '-', '-', 'Nightly'],
    ]);
  });
});

describe('the console\'s schedules page', () => {
  it('names each button after what it does to which schedule, and says the state and zone in words', () => {
    expect(actionsOf({ name: 'Nightly', state: 'enabled' })).toEqual([
      { action: 'pause', label: 'Pause Nightly' },
      { action: 'delete', label: 'Delete Nightly' },
    ]);
    expect(actionsOf({ name: 'Nightly', state: 'paused' }).map((a) => a.label)).toEqual(['Resume Nightly', 'Delete Nightly']);
    expect([stateText({ state: 'enabled' }), stateText({ state: 'paused', skipped: 2 })]).toEqual(['Enabled', 'Paused · 2 skipped']);
    expect([whenText({ schedule: 'rate(1 hour)', timezone: 'UTC' }), whenText({ schedule: 'cron(0 9 ? * MON *)', timezone: 'Europe/Berlin' })]).toEqual([
      'rate(1 hour)',
      'cron(0 9 ? * MON *) (Europe/Berlin)',
    ]);
  });
});

describe('createSchedule', () => {
  const body = { name: 'Nightly', schedule: 'rate(1 hour)', timezone: 'UTC', overlap: 'skip' as const, run: { goal: 'Report.', mode: 'single' as const } };
  const trigger = (fail = false) => ({ created: [] as string[], create: async function (this: { created: string[] }, s: Schedule) { if (fail) throw new Error('Scheduler down'); this.created.push(s.scheduleId); }, setState: async () => {}, remove: async () => {} });
  const caller = { ...alice, scopes: [] };

  it("refuses one past the owner's limit with TooManySchedules, counting only the owner's own", async () => {
    const store = new MemoryScheduleStore();
    const deps = { schedules: store, trigger: trigger(), newId: (() => { let n = 0; return () => String(++n); })(), maxSchedulesPerCaller: 2 };
    await createSchedule(body, caller, deps);
    await createSchedule(body, { principal: 'bob', tenant: 'acme', scopes: [] }, deps);
    await createSchedule(body, caller, deps);
    await expect(createSchedule(body, caller, deps)).rejects.toMatchObject({ name: 'TooManySchedules', status: 429 });
    expect(store.items.size).toBe(3);
  });

  it('leaves no record behind when its trigger cannot be made', async () => {
    const store = new MemoryScheduleStore();
    await expect(createSchedule(body, caller, { schedules: store, trigger: trigger(true), newId: () => '1' })).rejects.toThrow('Scheduler down');
    expect(store.items.size).toBe(0);
  });
});
