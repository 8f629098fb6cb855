/**
 * Schedules in `npm run bench` (run alone: `npx tsx test/bench/schedules.ts`): how late the dev
 * runtime fires a schedule after its time, on its real timer. The scheduler's clock is set a little
 * before a minute's boundary so an every-minute cron comes due in about a second and a half; the
 * lag is from the due time to the run request handed to the intake (its run created), and to the
 * run's record being readable. Printed, not asserted (target: within 2 s).
 */
import { say } from '../support/agents.js';
import { startFixture } from '../support/local-stack.js';
import { row } from './table.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const schedules = 3;
// The scheduler's time runs ahead of the wall clock by this much, set once the stack is up: its next minute then starts ~1.5 s later.
let offset = 0;
const firings: { scheduleId: string; lagMs: number }[] = [];
const fixture = await startFixture(
  {},
  { schedules: { clock: () => new Date(Date.now() + offset), onFired: ({ scheduleId, due, firedAt }) => firings.push({ scheduleId, lagMs: firedAt.getTime() - due.getTime() }) } },
);
try {
  const now = Date.now();
  offset = 60_000 - (now % 60_000) - 1_500;
  const tag = fixture.book.respondWith('bench-schedule', () => ({ turn: say('Done.') }));
  for (let i = 0; i < schedules; i++) {
    const res = await fixture.post('/schedules', { name: `bench ${i}`, schedule: 'cron(* * * * ? *)', overlap: 'allow', run: { goal: `${tag} Tick.`, mode: 'single' } });
    if (res.status !== 201) throw new Error(`POST /schedules answered ${res.status}: ${JSON.stringify(res.body)}`);
  }
  const deadline = Date.now() + 10_000;
  while (firings.length < schedules && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const due = Math.ceil((now + offset) / 60_000) * 60_000 - offset;
  const { body } = await fixture.get('/schedules');
  const runIds = (body.items as { lastRunId?: string }[]).map((s) => s.lastRunId).filter((id): id is string => Boolean(id));
  const readableMs = Date.now() - due;
  console.log(`\n## Schedules fired by the dev runtime (${schedules} every-minute schedules due at the same time; target: within 2 s)\n`);
  console.log(row(['schedule', 'ms from its time to its run request handled (run created)']));
  console.log(row(['---', '---']));
  for (const f of firings) console.log(row([f.scheduleId, f.lagMs]));
  console.log(`\n${runIds.length} of ${schedules} runs recorded on their schedules ${readableMs} ms after the due time (including the GET /schedules that read them).`);
  for (const runId of runIds) await fixture.waitFor(runId, 30_000);
} finally {
  await fixture.close();
}
