/** `stepwise schedules`: list, create, show, pause, resume and delete schedules (docs/schedules.md). */
import type { Command } from 'commander';
import type { ApiClient } from '../../functions/api/client.js';

type CreateBody = Parameters<ApiClient['createSchedule']>[0];
type View = Awaited<ReturnType<ApiClient['getSchedule']>>;

export interface ScheduleCommandDeps {
  client: () => ApiClient;
  /** Prints the API's answer as JSON with --json, else the human text. */
  print: (value: unknown, human: () => string) => void;
}

/** One schedule as a line of the listing. */
export function scheduleRows(items: readonly View[]): string[][] {
  return items.map((s) => [s.scheduleId, s.state, s.schedule + (s.timezone === 'UTC' ? '' : ` ${s.timezone}`), s.nextRunAt ?? '-', s.lastRunId ?? '-', s.name]);
}

/**
 * The body of `schedules create`: a JSON file (`--file`, the whole `POST /schedules` body), with
 * the flags given over it; the run's goal from `--goal` and its agent from `--agent`.
 */
export function createBody(file: Record<string, unknown>, flags: { name?: string; schedule?: string; timezone?: string; overlap?: string; goal?: string; agent?: string }): CreateBody {
  const run = { ...((file.run as Record<string, unknown> | undefined) ?? {}), ...(flags.goal ? { goal: flags.goal } : {}), ...(flags.agent ? { agent: flags.agent } : {}) };
  return {
    ...file,
    ...(flags.name ? { name: flags.name } : {}),
    ...(flags.schedule ? { schedule: flags.schedule } : {}),
    ...(flags.timezone ? { timezone: flags.timezone } : {}),
    ...(flags.overlap ? { overlap: flags.overlap } : {}),
    run,
  } as CreateBody;
}

/** Adds `schedules` and its subcommands to the program. */
export function scheduleCommands(program: Command, deps: ScheduleCommandDeps, table: (header: string[], rows: string[][]) => string[]): void {
  const schedules = program.command('schedules').description('runs on a cron or rate expression: list (the default), create, show, pause, resume, delete');
  schedules
    .command('list', { isDefault: true })
    .description('your schedules (with --tenant, every schedule of your tenant: admins)')
    .option('--tenant', 'every schedule of your tenant', false)
    .action(async (opts: { tenant: boolean }) => {
      const page = await deps.client().listSchedules(opts.tenant ? { scope: 'tenant' } : {});
      deps.print(page, () => (page.items.length ? table(['SCHEDULE ID', 'STATE', 'SCHEDULE', 'NEXT RUN', 'LAST RUN', 'NAME'], scheduleRows(page.items)).join('\n') : 'no schedules'));
    });
  schedules
    .command('create')
    .description('a schedule, from flags or a JSON file of the POST /schedules body (flags override it)')
    .option('--file <path>', 'a JSON file: { name, schedule, timezone?, overlap?, run }')
    .option('--name <name>', 'what to call it')
    .option('--schedule <expression>', 'cron(min hour day-of-month month day-of-week year) or rate(N minutes|hours|days)')
    .option('--timezone <zone>', 'an IANA time zone for cron, e.g. Europe/Berlin (default UTC)')
    // Made by the program itself, so this file adds no import of commander to the bundle.
    .addOption(schedules.createOption('--overlap <what>', 'a firing while the last run still runs: skip it (default) or allow another run').choices(['skip', 'allow']))
    .option('--goal <text>', "the run's goal")
    .option('--agent <name>', 'the agent to run (GET /agents)')
    .action(async (opts: { file?: string; name?: string; schedule?: string; timezone?: string; overlap?: string; goal?: string; agent?: string }) => {
      const file = opts.file ? await jsonFile(opts.file) : {};
      const created = await deps.client().createSchedule(createBody(file, opts));
      deps.print(created, () => `${created.scheduleId} ${created.state}; next run ${created.nextRunAt ?? 'never'}`);
    });
  schedules
    .command('show')
    .argument('<scheduleId>')
    .description('one schedule')
    .action(async (scheduleId: string) => {
      const s = await deps.client().getSchedule(scheduleId);
      deps.print(s, () =>
        [`${s.scheduleId} · ${s.name} · ${s.state}`, `${s.schedule} (${s.timezone}), overlap ${s.overlap}`, `next run: ${s.nextRunAt ?? '-'}`, `last run: ${s.lastRunId ?? '-'}${s.lastRunAt ? ` at ${s.lastRunAt}` : ''}`, ...(s.skipped ? [`skipped: ${s.skipped}, last at ${s.lastSkippedAt ?? '-'}`] : [])].join('\n'),
      );
    });
  for (const action of ['pause', 'resume'] as const) {
    schedules
      .command(action)
      .argument('<scheduleId>')
      .description(action === 'pause' ? 'stop firing it until resumed' : 'fire it again')
      .action(async (scheduleId: string) => {
        const s = await deps.client().setScheduleState(scheduleId, action);
        deps.print(s, () => `${s.scheduleId} ${s.state}`);
      });
  }
  schedules
    .command('delete')
    .argument('<scheduleId>')
    .description('delete it (runs it started go on)')
    .action(async (scheduleId: string) => {
      await deps.client().deleteSchedule(scheduleId);
      deps.print({ scheduleId, deleted: true }, () => `${scheduleId} deleted`);
    });
}

async function jsonFile(path: string): Promise<Record<string, unknown>> {
  // Loaded only to read a file, so starting the CLI loads nothing more.
  const { readFile } = await import('node:fs/promises');
  const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${path} must hold a JSON object`);
  return parsed as Record<string, unknown>;
}
