import { describe, expect, it } from 'vitest';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { RunCompletedDetail, runSucceededDetailType } from '../../functions/core/runs/events.js';
import type { RunView } from '../../functions/api/schemas.js';
import type { ScheduleView } from '../../functions/core/schedules/request.js';
import { localIssuer } from '../../local/issuer.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

// The scheduler's time moves only when a test says so (`scheduler.tick(now)`): no minute-long sleeps.
const local = useLocalStack({}, { schedules: { manual: true } });

async function postRun(body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${local.stack.url}/runs`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function orchestrations(runId: string) {
  return local.stack.runtime.list().filter((e) => e.name === runId);
}

describe('idempotency on DynamoDB', () => {
  it('starts one run for repeats of a key and body, and refuses the key with another body', async () => {
    const tag = local.book.add('idem', { turn: say('once') });
    const body = { goal: `${tag} Say once.`, mode: 'single' };
    const headers = { 'idempotency-key': `key-${Date.now()}` };
    const [a, b] = await Promise.all([postRun(body, headers), postRun(body, headers)]);
    expect(a.status).toBe(202);
    expect(b.body.runId).toBe(a.body.runId);
    await local.waitFor(String(a.body.runId));
    expect((await postRun(body, headers)).body.runId).toBe(a.body.runId);
    expect(orchestrations(String(a.body.runId))).toHaveLength(1);
    expect(local.book.requests.get('idem')).toHaveLength(1);
    expect((await postRun({ ...body, maxIterations: 3 }, headers)).status).toBe(409);
  });
});

describe('sessions', () => {
  it('continue the conversation: the next run’s model sees the earlier turns, in order', async () => {
    const session = `s-${Date.now()}`;
    const tag = local.book.add('session', { turn: use(['toolu_1', 'calculator', { operation: 'add', a: 40, b: 2 }]) }, { turn: say('42') }, { turn: say('You asked for 40 + 2.') });
    const first = await local.run(`${tag} What is 40 + 2?`, { sessionId: session });
    const second = await local.run(`${tag} What did I ask before?`, { sessionId: session });

    expect([first.status, second.status]).toEqual(['succeeded', 'succeeded']);
    const seen = local.book.requests.get('session')?.[2]?.messages ?? [];
    expect(seen.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(JSON.stringify(seen[0])).toContain('What is 40 + 2?');
    expect(JSON.stringify(seen[4])).toContain('What did I ask before?');
    // Each run's transcript holds its own messages.
    expect(((await local.get(`/runs/${second.runId}/messages`)).body.items as unknown[]).length).toBe(2);
  });

  it('refuse a second run while the first still runs (409, nothing written), then admit the next', async () => {
    const session = `busy-${Date.now()}`;
    const tag = local.book.add('busy', { turn: say('slow answer'), delayMs: 800 }, { turn: say('next') });
    const first = await postRun({ goal: `${tag} Take a while.`, mode: 'single', sessionId: session });
    const refused = await postRun({ goal: `${tag} Me too.`, mode: 'single', sessionId: session });

    expect(refused).toMatchObject({ status: 409, body: { error: { code: 'SessionBusy' } } });
    const runsBefore = local.stack.runtime.list().length;
    await local.waitFor(String(first.body.runId));
    expect(local.stack.runtime.list().length).toBe(runsBefore);
    const next = await postRun({ goal: `${tag} Now me.`, mode: 'single', sessionId: session });
    expect(next.status).toBe(202);
    expect((await local.waitFor(String(next.body.runId))).status).toBe('succeeded');
  });
});

describe('two runs racing for one session', () => {
  it('admit one; the other gets 409 and writes nothing', async () => {
    const session = `race-${Date.now()}`;
    const tag = local.book.add('race', { turn: say('winner') }, { turn: say('should not run') });
    const before = local.stack.runtime.list().length;
    const answers = await Promise.all([
      postRun({ goal: `${tag} One.`, mode: 'single', sessionId: session }),
      postRun({ goal: `${tag} Two.`, mode: 'single', sessionId: session }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409]);
    const loser = answers.find((a) => a.status === 409);
    expect(loser?.body).toMatchObject({ error: { code: 'SessionBusy' } });
    const winner = answers.find((a) => a.status === 202);
    await local.waitFor(String(winner?.body.runId));
    // One orchestrator and one agent loop started: the loser left no run behind.
    expect(local.stack.runtime.list().length - before).toBe(2);
    expect(local.book.requests.get('race')).toHaveLength(1);
  });
});

describe('the event intake', () => {
  const put = (detail: unknown) =>
    local.post('/_local/events', { Source: 'com.example.ci', DetailType: 'Stepwise Run Requested', Detail: JSON.stringify(detail) });

  it('starts a run from a valid event, once however often it is delivered', async () => {
    const tag = local.book.add('event', { turn: say('from an event') });
    const runId = `evt-${Date.now()}`;
    const detail = { goal: `${tag} Hello from EventBridge.`, mode: 'single', runId };
    expect((await put(detail)).status).toBe(200);
    expect((await put(detail)).status).toBe(200);

    const run = await local.waitFor(runId);
    expect(run).toMatchObject({ runId, status: 'succeeded', result: { response: 'from an event' } });
    expect(orchestrations(runId)).toHaveLength(1);
    const events = (await local.get('/_local/events')).body.items as { detailType: string; detail: { runId?: string } }[];
    expect(events.filter((e) => e.detailType === 'Stepwise Run Requested' && JSON.stringify(e.detail).includes(runId))).toHaveLength(2);
    const completed = events.filter((e) => e.detailType === runSucceededDetailType && e.detail.runId === runId);
    expect(completed).toHaveLength(1);
    expect(RunCompletedDetail.parse(completed[0]?.detail)).toMatchObject({ runId, status: 'succeeded', phase: 'complete' });
  });

  it('starts one run when an event without a run id is delivered twice', async () => {
    const tag = local.book.add('event-no-id', { turn: say('once') });
    const detail = { goal: `${tag} No id.`, mode: 'single' };
    const before = local.stack.runtime.list().length;
    // The same EventBridge event (one id) handed to the intake twice, as a redelivery would.
    const envelope = { Source: 'com.example.ci', DetailType: 'Stepwise Run Requested', Detail: JSON.stringify(detail) };
    const first = await local.post('/_local/events', envelope);
    const eventId = (first.body.Entries as { EventId: string }[])[0]?.EventId;
    const runId = `evt-${eventId}`;
    await local.waitFor(runId);
    await local.stack.redeliver(String(eventId));
    await local.stack.runtime.idle();
    expect(local.stack.runtime.list().length - before).toBe(2);
    expect(local.book.requests.get('event-no-id')).toHaveLength(1);
  });

  it('sends an invalid event to the dead letters with the reason, and starts nothing', async () => {
    const before = local.stack.runtime.list().length;
    await put({ goal: '', mode: 'swarm', runId: 'bad/id' });
    const letters = (await local.get('/_local/dead-letters')).body.items as { reason: string; issues: { path: string }[] }[];
    expect(letters.at(-1)?.reason).toBe('The event is not a valid Stepwise Run Requested request.');
    expect(letters.at(-1)?.issues.map((i) => i.path).sort()).toEqual(['detail.goal', 'detail.mode', 'detail.runId']);
    expect(local.stack.runtime.list().length).toBe(before);
    expect(((await local.get('/runs/bad')).status)).toBe(404);
  });
});


describe('a file too large for a response', () => {
  it('is answered with a redirect to a presigned link that serves its bytes', async () => {
    const tag = local.book.add('big-file', { turn: say('Made it.') });
    const run = await local.run(`${tag} Make a big file.`);
    const bytes = new Uint8Array(5 * 1024 * 1024).map((_, i) => i % 251);
    const { s3 } = awsClients(readEnv(process.env));
    await s3.send(new PutObjectCommand({ Bucket: process.env.STEPWISE_BUCKET, Key: `workspaces/${run.runId}/out/big.bin`, Body: bytes }));
    const res = await fetch(`${local.stack.url}/runs/${run.runId}/files/out/big.bin`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const link = res.headers.get('location') ?? '';
    expect(link).toContain(`/workspaces/${run.runId}/out/big.bin?`);
    expect(new URL(link).searchParams.get('X-Amz-Expires')).toBe('300');
    const fetched = await fetch(link);
    expect(fetched.status).toBe(200);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    // A missing file is still a 404, not a link.
    const small = await fetch(`${local.stack.url}/runs/${run.runId}/files/out/big.bin`.replace('big.bin', 'none.txt'));
    expect(small.status).toBe(404);
  });
});

/**
 * Schedules (docs/schedules.md) fire through this front door: a run request on the bus from the
 * schedules source, on behalf of the schedule's owner.
 */
const tenantToken = (sub: string) => local.stack.issuer.issue({ sub, tenant: 'acme' });
const at = (iso: string, plusMs = 0) => new Date(Date.parse(iso) + plusMs);
const minutes = (n: number) => n * 60_000;

/** Waits until the run stops running, read as the caller the token names. */
async function finished(runId: string, tokenOf: string): Promise<RunView> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await local.request('GET', `/runs/${runId}`, { token: tokenOf });
    if (res.status !== 200) throw new Error(`GET /runs/${runId} answered ${res.status}.`);
    if (res.body.status !== 'running') return res.body as unknown as RunView;
    if (Date.now() > deadline) throw new Error(`Run ${runId} is still running.`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function schedule(id: string, tokenOf: string): Promise<ScheduleView> {
  const res = await local.request('GET', `/schedules/${id}`, { token: tokenOf });
  expect(res.status).toBe(200);
  return res.body as unknown as ScheduleView;
}

describe('schedules on the local stack', () => {
  it('refuses a bad expression, time zone or run with a 400 naming the field, and creates nothing', async () => {
    const alice = await tenantToken('alice-bad');
    const run = { goal: 'Say hi.', mode: 'single' };
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'n', schedule: 'cron(0 9 * * * *)', run }, 'schedule'],
      [{ name: 'n', schedule: 'cron(0 9 * *)', run }, 'schedule'],
      [{ name: 'n', schedule: 'rate(5 minute)', run }, 'schedule'],
      [{ name: 'n', schedule: 'rate(0 hours)', run }, 'schedule'],
      [{ name: 'n', schedule: 'cron(61 9 ? * MON *)', run }, 'schedule'],
      [{ name: 'n', schedule: 'rate(1 hour)', timezone: 'Mars/Olympus_Mons', run }, 'timezone'],
      [{ name: 'n', schedule: 'rate(1 hour)', run: { goal: '', mode: 'single' } }, 'run.goal'],
      [{ name: 'n', schedule: 'rate(1 hour)', overlap: 'queue', run }, 'overlap'],
    ];
    for (const [body, field] of cases) {
      const res = await local.request('POST', '/schedules', { token: alice, body });
      expect({ status: res.status, code: (res.body.error as { code: string }).code, paths: (res.body.error as { issues: { path: string }[] }).issues.map((i) => i.path) }).toEqual({
        status: 400,
        code: 'ValidationFailed',
        paths: [field],
      });
    }
    expect((await local.request('GET', '/schedules', { token: alice })).body).toEqual({ items: [] });
  });

  it('fires a rate at its times as its owner, skips while the last run still runs, and hides the schedule from others', async () => {
    const [alice, bob] = await Promise.all([tenantToken('alice'), tenantToken('bob')]);
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const tag = local.book.respondWith('scheduled-rate', async (_body, n) => {
      if (n === 0) await gate;
      return { turn: say(`Report ${n}.`) };
    });
    const created = await local.request('POST', '/schedules', { token: alice, body: { name: 'Nightly', schedule: 'rate(5 minutes)', run: { goal: `${tag} Report.`, mode: 'single' } } });
    expect(created.status).toBe(201);
    const view = created.body as unknown as ScheduleView;
    expect(view).toMatchObject({ name: 'Nightly', schedule: 'rate(5 minutes)', timezone: 'UTC', overlap: 'skip', state: 'enabled', owner: { principal: `${localIssuer}#alice`, tenant: 'acme' } });
    expect(view.nextRunAt).toBe(at(view.createdAt, minutes(5)).toISOString());

    // Before its time nothing fires; at it, one run starts, owned by alice and naming the schedule.
    expect(await local.stack.scheduler.tick(at(view.createdAt, minutes(5) - 1000))).not.toContain(view.scheduleId);
    expect(await local.stack.scheduler.tick(at(view.createdAt, minutes(5)))).toContain(view.scheduleId);
    const first = (await schedule(view.scheduleId, alice)).lastRunId ?? '';
    const run = (await local.request('GET', `/runs/${first}`, { token: alice })).body as unknown as RunView;
    expect({ owner: run.owner, scheduleId: run.scheduleId, status: run.status }).toEqual({ owner: { principal: `${localIssuer}#alice`, tenant: 'acme' }, scheduleId: view.scheduleId, status: 'running' });

    // Five minutes on, the first run still runs: the firing starts nothing and is counted.
    expect(await local.stack.scheduler.tick(at(view.createdAt, minutes(10)))).toContain(view.scheduleId);
    const skipped = await schedule(view.scheduleId, alice);
    expect({ lastRunId: skipped.lastRunId, skipped: skipped.skipped }).toEqual({ lastRunId: first, skipped: 1 });

    release();
    expect((await finished(first, alice)).status).toBe('succeeded');
    expect(await local.stack.scheduler.tick(at(view.createdAt, minutes(15)))).toContain(view.scheduleId);
    const second = (await schedule(view.scheduleId, alice)).lastRunId ?? '';
    expect(second).not.toBe(first);
    expect((await finished(second, alice)).scheduleId).toBe(view.scheduleId);

    // Bob sees no schedule of alice's: every route answers as for a missing one.
    for (const [method, path] of [['GET', `/schedules/${view.scheduleId}`], ['DELETE', `/schedules/${view.scheduleId}`], ['POST', `/schedules/${view.scheduleId}/pause`], ['POST', `/schedules/${view.scheduleId}/resume`]] as const) {
      const res = await local.request(method, path, { token: bob });
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 404, body: { error: { code: 'ScheduleNotFound', message: `No schedule ${view.scheduleId}.` } } });
    }
    expect((await local.request('GET', '/schedules', { token: bob })).body).toEqual({ items: [] });
    expect((await local.request('GET', '/schedules', { token: alice })).body.items).toHaveLength(1);
    await local.request('DELETE', `/schedules/${view.scheduleId}`, { token: alice });
  });

  it('fires a cron in its time zone, not while paused, again once resumed, and never once deleted', async () => {
    const carol = await tenantToken('carol');
    const tag = local.book.respondWith('scheduled-cron', () => ({ turn: say('Morning.') }));
    // 09:30 in Tokyo (no daylight saving time) is 00:30 UTC.
    const created = await local.request('POST', '/schedules', {
      token: carol,
      body: { name: 'Morning', schedule: 'cron(30 9 ? * * *)', timezone: 'Asia/Tokyo', overlap: 'allow', run: { goal: `${tag} Morning.`, mode: 'single' } },
    });
    expect(created.status).toBe(201);
    const view = created.body as unknown as ScheduleView;
    const next = view.nextRunAt ?? '';
    expect(next).toMatch(/T00:30:00\.000Z$/);
    expect(Date.parse(next) - Date.now()).toBeLessThanOrEqual(minutes(24 * 60));

    const paused = await local.request('POST', `/schedules/${view.scheduleId}/pause`, { token: carol });
    expect({ state: paused.body.state, nextRunAt: paused.body.nextRunAt }).toEqual({ state: 'paused', nextRunAt: undefined });
    expect(await local.stack.scheduler.tick(at(next))).not.toContain(view.scheduleId);

    const resumed = await local.request('POST', `/schedules/${view.scheduleId}/resume`, { token: carol });
    expect(resumed.body.state).toBe('enabled');
    expect(await local.stack.scheduler.tick(at(next))).toContain(view.scheduleId);
    const { lastRunId } = await schedule(view.scheduleId, carol);
    expect((await finished(lastRunId ?? '', carol)).status).toBe('succeeded');

    expect((await local.request('DELETE', `/schedules/${view.scheduleId}`, { token: carol })).status).toBe(204);
    expect((await local.request('GET', `/schedules/${view.scheduleId}`, { token: carol })).status).toBe(404);
    expect(await local.stack.scheduler.tick(at(next, minutes(48 * 60)))).not.toContain(view.scheduleId);
    expect((await schedule(view.scheduleId, carol).catch(() => undefined))).toBeUndefined();
  });

  it('refuses a schedules-source event put by anyone but the scheduler, so no one can start runs in a schedule owner\'s name', async () => {
    const res = await local.post('/_local/events', {
      Source: 'stepwise.schedules',
      DetailType: 'Stepwise Run Requested',
      Detail: { goal: 'Forged.', mode: 'single', scheduleId: 'sch-x', onBehalfOf: { principal: `${localIssuer}#alice`, tenant: 'acme' } },
    });
    expect(res.body).toMatchObject({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'AccessDeniedException' }] });
  });
});
