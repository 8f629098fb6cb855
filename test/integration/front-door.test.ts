import { describe, expect, it } from 'vitest';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { RunCompletedDetail, runSucceededDetailType } from '../../functions/core/runs/events.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();

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
