/**
 * Schedule expressions as EventBridge Scheduler reads them (docs/schedules.md, "Expressions"):
 * `cron(minutes hours day-of-month month day-of-week year)` and `rate(N unit)`, checked field by
 * field so a bad one is refused before anything is created, and the times they fire at, computed
 * by croner (the dev runtime fires them; the API shows the next one).
 */
import { Cron } from 'croner';

/** A parsed expression: a cron pattern in croner's syntax, or a fixed interval. */
export type ParsedExpression = { kind: 'cron'; pattern: string } | { kind: 'rate'; everyMs: number };

const names = { month: 'JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC', day: 'SUN|MON|TUE|WED|THU|FRI|SAT' };

/** One value of a field: a number in its range, or a name (months, days). */
function valueIn(min: number, max: number, named?: string) {
  return (text: string) => (/^\d{1,4}$/.test(text) && Number(text) >= min && Number(text) <= max) || (named !== undefined && new RegExp(`^(${named})$`).test(text));
}

/** Whether a list item of a field is valid: `*`, a value, a range, with an optional `/step`. */
function itemValid(item: string, value: (text: string) => boolean): boolean {
  const [base = '', step, extra] = item.split('/');
  if (extra !== undefined || (step !== undefined && !/^\d{1,4}$/.test(step))) return false;
  if (base === '*') return true;
  const [from = '', to, more] = base.split('-');
  return more === undefined && value(from) && (to === undefined || value(to));
}

/** Checks one field of a cron expression; the message says what is wrong, or undefined. */
function checkField(field: string, text: string): string | undefined {
  const plain = (min: number, max: number, named?: string) =>
    text.split(',').every((item) => itemValid(item, valueIn(min, max, named))) ? undefined : `${field} must be ${min}-${max}${named ? ' or a name' : ''} with , - * /`;
  switch (field) {
    case 'minutes':
      return plain(0, 59);
    case 'hours':
      return plain(0, 23);
    case 'month':
      return plain(1, 12, names.month);
    case 'year':
      return plain(1970, 2199);
    case 'day-of-month':
      if (text === '?' || text === 'L' || /^([1-9]|[12]\d|3[01])W$/.test(text) || /^L-([1-9]|[12]\d|30)$/.test(text)) return undefined;
      return plain(1, 31);
    default:
      // day-of-week
      if (text === '?' || text === 'L' || /^[1-7]L$/.test(text) || new RegExp(`^([1-7]|${names.day})#[1-5]$`).test(text)) return undefined;
      return plain(1, 7, names.day);
  }
}

const cronFields = ['minutes', 'hours', 'day-of-month', 'month', 'day-of-week', 'year'] as const;

/**
 * Parses an expression, or says what is wrong with it. `?` must stand in exactly one of
 * day-of-month and day-of-week, as EventBridge requires.
 */
export function parseExpression(expression: string): { ok: true; parsed: ParsedExpression } | { ok: false; message: string } {
  const rate = /^rate\((\d{1,6}) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (rate) {
    const value = Number(rate[1]);
    const unit = rate[2] ?? '';
    if (value < 1) return { ok: false, message: 'a rate must be a positive whole number' };
    if ((value === 1) !== !unit.endsWith('s')) return { ok: false, message: `write rate(1 ${unit.replace(/s$/, '')}) for one, rate(${value} ${unit.replace(/s?$/, 's')}) for more` };
    const unitMs = unit.startsWith('minute') ? 60_000 : unit.startsWith('hour') ? 3_600_000 : 86_400_000;
    return { ok: true, parsed: { kind: 'rate', everyMs: value * unitMs } };
  }
  const cron = /^cron\(([^()]*)\)$/.exec(expression);
  if (!cron) return { ok: false, message: 'must be cron(minutes hours day-of-month month day-of-week year) or rate(N minutes|hours|days)' };
  const fields = (cron[1] ?? '').trim().split(/\s+/);
  if (fields.length !== 6) return { ok: false, message: `a cron expression has 6 fields (minutes hours day-of-month month day-of-week year), not ${fields.length}` };
  for (const [index, field] of cronFields.entries()) {
    const problem = checkField(field, fields[index] ?? '');
    if (problem) return { ok: false, message: problem };
  }
  const [minutes, hours, dom = '', month, dow = '', year] = fields;
  if ((dom === '?') === (dow === '?')) return { ok: false, message: 'use ? in exactly one of day-of-month and day-of-week' };
  // croner's `?` means "now"; EventBridge's means "any". Its day-of-week counts SUN=1 as EventBridge does (alternativeWeekdays); a bare L there is Saturday.
  const any = (field: string) => (field === '?' ? '*' : field);
  const pattern = ['0', minutes, hours, any(dom), month, dow === 'L' ? '7' : any(dow), year].join(' ');
  try {
    cronOf(pattern, 'UTC').stop();
  } catch (error) {
    return { ok: false, message: `is not a cron expression this deployment can read (${error instanceof Error ? error.message : String(error)})` };
  }
  return { ok: true, parsed: { kind: 'cron', pattern } };
}

/** A paused croner job of a pattern: only asked for times, never run. */
function cronOf(pattern: string, timezone: string): Cron {
  return new Cron(pattern, { paused: true, timezone, mode: '7-part', alternativeWeekdays: true, sloppyRanges: true });
}

/** Whether a name is an IANA time zone this runtime knows. */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return name.length > 0 && name.length <= 50;
  } catch {
    return false;
  }
}

/**
 * The first time after `after` that a schedule fires. A rate counts from `since` (its creation),
 * as EventBridge Scheduler does; a cron expression is read in `timezone`. `undefined` when it
 * never fires again (a year in the past).
 */
export function nextFireTime(parsed: ParsedExpression, timezone: string, since: Date, after: Date): Date | undefined {
  if (parsed.kind === 'rate') {
    const periods = Math.floor((after.getTime() - since.getTime()) / parsed.everyMs) + 1;
    return new Date(since.getTime() + Math.max(1, periods) * parsed.everyMs);
  }
  const job = cronOf(parsed.pattern, timezone);
  try {
    return job.nextRun(after) ?? undefined;
  } finally {
    job.stop();
  }
}

/** The next time a stored schedule fires after `after`, or undefined (an expression that no longer parses, or none left). */
export function nextRunOf(schedule: { schedule: string; timezone: string; createdAt: string }, after: Date): Date | undefined {
  const parsed = parseExpression(schedule.schedule);
  return parsed.ok ? nextFireTime(parsed.parsed, schedule.timezone, new Date(schedule.createdAt), after) : undefined;
}
