/**
 * The dev runtime's EventBridge Scheduler (docs/schedules.md, "Locally"): it keeps the enabled
 * schedules with the next time each fires (croner computes cron times in the schedule's time zone;
 * a rate counts from the schedule's creation), and at that time puts the same run request on the
 * local bus as EventBridge Scheduler puts deployed. Time is a clock it is given: with `manual`,
 * no timer runs and a test moves time with `tick(now)`.
 */
import { firingEntry } from '../../functions/core/schedules/fire.js';
import { nextRunOf } from '../../functions/core/schedules/expression.js';
import type { Schedule, ScheduleTrigger } from '../../functions/core/schedules/types.js';
import type { PutEventsEntry } from './event-bus.js';

export interface LocalSchedulerOptions {
  /** Puts a firing's run request on the bus and hands it to the intake. */
  fire: (entry: PutEventsEntry & { Source: string; DetailType: string }) => Promise<void>;
  /** What time it is. @default the system clock */
  clock?: () => Date;
  /** No timer: time moves only when `tick` is called (tests). @default false */
  manual?: boolean;
  /** Told of each firing: when it was due and when it was put on the bus (the bench's lag). */
  onFired?: (firing: { scheduleId: string; due: Date; firedAt: Date }) => void;
}

/** A timer cannot wait longer than about 24 days; it wakes at least hourly and looks again. */
const longestWaitMs = 60 * 60 * 1000;

export class LocalScheduler implements ScheduleTrigger {
  private readonly entries = new Map<string, { schedule: Schedule; next: Date | undefined }>();
  private readonly clock: () => Date;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private ticking: Promise<string[]> = Promise.resolve([]);

  constructor(private readonly options: LocalSchedulerOptions) {
    this.clock = options.clock ?? (() => new Date());
  }

  /** Takes over schedules kept from an earlier start (the data folder), as EventBridge Scheduler keeps them. */
  load(schedules: readonly Schedule[]): void {
    for (const schedule of schedules) this.keep(schedule);
    this.arm();
  }

  async create(schedule: Schedule): Promise<void> {
    this.keep(schedule);
    this.arm();
  }

  async setState(schedule: Schedule): Promise<void> {
    this.keep(schedule);
    this.arm();
  }

  async remove(schedule: Schedule): Promise<void> {
    this.entries.delete(schedule.scheduleId);
    this.arm();
  }

  /** When each enabled schedule fires next. */
  nextTimes(): Map<string, Date> {
    return new Map([...this.entries].flatMap(([id, entry]) => (entry.next ? [[id, entry.next] as const] : [])));
  }

  /**
   * Fires every enabled schedule whose time has come by `now`, once each however many times it
   * missed (EventBridge Scheduler does not make up for missed times either), and sets its next
   * time after `now`. Resolves with the ids of those fired, once the intake has handled them.
   */
  tick(now: Date = this.clock()): Promise<string[]> {
    // One tick at a time, so a firing is never handed over twice.
    this.ticking = this.ticking.then(() => this.fireDue(now));
    return this.ticking;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private async fireDue(now: Date): Promise<string[]> {
    const due = [...this.entries.values()].filter((entry) => entry.next && entry.next.getTime() <= now.getTime());
    // Schedules due at once fire at once, as EventBridge Scheduler's do: none waits for another's intake.
    const fired = await Promise.allSettled(
      due.map(async (entry) => {
        const at = entry.next as Date;
        entry.next = nextRunOf(entry.schedule, now);
        await this.options.fire(firingEntry(entry.schedule));
        this.options.onFired?.({ scheduleId: entry.schedule.scheduleId, due: at, firedAt: this.clock() });
      }),
    );
    this.arm();
    const failed = fired.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    return due.map((entry) => entry.schedule.scheduleId);
  }

  private keep(schedule: Schedule): void {
    this.entries.set(schedule.scheduleId, { schedule, next: schedule.state === 'enabled' ? nextRunOf(schedule, this.clock()) : undefined });
  }

  /** Sets the timer for the earliest next time (none in manual mode). */
  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.options.manual || this.closed) return;
    const times = [...this.nextTimes().values()].map((d) => d.getTime());
    if (!times.length) return;
    const wait = Math.min(Math.max(0, Math.min(...times) - this.clock().getTime()), longestWaitMs);
    this.timer = setTimeout(() => void this.tick(this.clock()).catch((error: unknown) => console.error(JSON.stringify({ level: 'error', message: 'A schedule could not fire', error: String(error) }))), wait);
    this.timer.unref();
  }
}
