import { builtinAgents, refOf } from '../../functions/core/definitions/definition.js';
import { describe, expect, it } from 'vitest';
import { TooManyRuns } from '../../functions/core/callers/types.js';
import { ownerKey } from '../../functions/core/callers/access.js';
import { ModelUnavailable } from '../../functions/core/model/types.js';
import { type CreateRunBody, createRunBody } from '../../functions/core/intake/request.js';
import { type DeadLetters, type IntakeDeps, IdempotencyConflict, SessionBusy } from '../../functions/core/intake/types.js';
import { bodyHash, cancelRun, createRun } from '../../functions/core/intake/create.js';
import { intakeEvent } from '../../functions/core/intake/events.js';
import { MemoryIdempotency, MemoryRunSlots, MemorySessions, RecordingStarter } from '../support/api.js';
import { MemoryRunStore, newRun } from '../support/memory.js';

const caller = { principal: 'iss#alice', scopes: [] };
const owner = { principal: 'iss#alice' };
const now = '2026-01-01T00:00:00.000Z';
const body: CreateRunBody = { goal: 'Add 2 and 3.', mode: 'single', maxIterations: 25 };

/** Intake on in-memory fakes; ids are run-1, run-2, … */
function intake(extra: Omit<Partial<IntakeDeps>, 'runs' | 'starter'> = {}) {
  let n = 0;
  const deps = {
    runs: new MemoryRunStore(),
    starter: new RecordingStarter(),
    idempotency: new MemoryIdempotency(),
    sessions: new MemorySessions(),
    slots: new MemoryRunSlots(),
    newId: () => `run-${++n}`,
    clock: () => new Date(now),
    ...extra,
  };
  return deps;
}

const assistant = refOf(builtinAgents[0]!);

describe('createRun', () => {
  it('stores the run as asked, with its session and model, and starts it', async () => {
    const deps = intake({ approvalTools: ['write_file'] });
    const started = await createRun({ ...body, sessionId: 's1', model: 'claude-haiku-4-5' }, deps, { caller });
    expect(started).toEqual({ runId: 'run-1', status: 'running', phase: 'idle' });
    expect(deps.runs.runs.get('run-1')).toEqual({
      runId: 'run-1',
      mode: 'single',
      goal: 'Add 2 and 3.',
      owner,
      // The run follows the built-in assistant at the version it started with.
      agent: assistant,
      agents: [{ place: 'single', ...assistant }],
      sessionId: 's1',
      model: 'claude-haiku-4-5',
      approvals: { tools: ['write_file'], layers: [{ from: 'deployment', tools: ['write_file'] }] },
      status: 'running',
      phase: 'idle',
      iterations: {},
      usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      createdAt: now,
      updatedAt: now,
    });
    expect(deps.starter.started).toEqual([
      { runId: 'run-1', mode: 'single', agent: 'single', label: 'single', conversationId: `session/${ownerKey(owner)}/s1`, maxIterations: 25, model: 'claude-haiku-4-5' },
    ]);
  });

  it('refuses a session that another running run holds, before writing anything', async () => {
    const deps = intake();
    await createRun({ ...body, sessionId: 's1' }, deps, { caller });
    await expect(createRun({ ...body, sessionId: 's1' }, deps, { caller })).rejects.toThrow(
      new SessionBusy('Session s1 is in use by run run-1, which is still running.'),
    );
    expect([...deps.runs.runs.keys()]).toEqual(['run-1']);
  });

  it('gives a session to the next run once the run holding it has ended', async () => {
    const deps = intake();
    await createRun({ ...body, sessionId: 's1' }, deps, { caller });
    await deps.runs.finish('run-1', { status: 'succeeded', phase: 'complete' });
    expect(await createRun({ ...body, sessionId: 's1' }, deps, { caller })).toEqual({ runId: 'run-2', status: 'running', phase: 'idle' });
  });

  it('starts a repeated run that was created but never started, and only that one', async () => {
    const deps = intake();
    await deps.runs.create(newRun('idle', 'g', { owner, phase: 'idle' }));
    await deps.runs.create(newRun('going', 'g', { owner, phase: 'executing' }));
    await deps.runs.create(newRun('done', 'g', { owner, status: 'succeeded', phase: 'complete' }));
    await deps.runs.create(newRun('stopping', 'g', { owner, status: 'cancelled', phase: 'idle' }));
    const answers = [];
    for (const runId of ['idle', 'going', 'done', 'stopping']) answers.push(await createRun(body, deps, { caller, runId }));
    expect(answers).toEqual([
      { runId: 'idle', status: 'running', phase: 'idle' },
      { runId: 'going', status: 'running', phase: 'executing' },
      { runId: 'done', status: 'succeeded', phase: 'complete' },
      { runId: 'stopping', status: 'cancelled', phase: 'idle' },
    ]);
    expect(deps.starter.started.map((s) => s.runId)).toEqual(['idle']);
  });

  it('answers a repeated Idempotency-Key with the first run, even once the owner is at the limit of running runs', async () => {
    const deps = intake({ maxRunningRuns: 1 });
    const first = await createRun(body, deps, { caller, idempotencyKey: 'k1' });
    expect(await createRun(body, deps, { caller, idempotencyKey: 'k1' })).toEqual(first);
    await expect(createRun(body, deps, { caller, idempotencyKey: 'k2' })).rejects.toThrow(
      new TooManyRuns('You have 1 runs running, the most this deployment allows; wait for one to end or cancel one.'),
    );
  });

  it('marks a run whose start failed and was never retried failed once it has waited ten minutes, freeing its quota slot', async () => {
    let clock = new Date(now);
    const deps = intake({ maxRunningRuns: 1, clock: () => clock });
    // A run left `idle` by a start that failed (a transient fault no repeat came to cure) holds the only slot.
    await deps.runs.create(newRun('lost', 'g', { owner, phase: 'idle', createdAt: now }));
    await deps.slots.take(owner, 'lost', 1, async () => true);
    clock = new Date(Date.parse(now) + 9 * 60_000);
    await expect(createRun(body, deps, { caller })).rejects.toThrow(TooManyRuns);
    expect((await deps.runs.get('lost'))?.status).toBe('running');

    clock = new Date(Date.parse(now) + 10 * 60_000);
    expect(await createRun(body, deps, { caller })).toEqual({ runId: 'run-2', status: 'running', phase: 'idle' });
    expect(await deps.runs.get('lost')).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: { code: 'StartFailed', message: 'The run never started: it was still waiting to start 10 minutes after it was created.' },
    });
  });

  it('never takes a slot from a run that started, however old', async () => {
    const deps = intake({ maxRunningRuns: 1, clock: () => new Date(Date.parse(now) + 86_400_000) });
    await deps.runs.create(newRun('busy', 'g', { owner, phase: 'executing', createdAt: now }));
    await deps.slots.take(owner, 'busy', 1, async () => true);
    await expect(createRun(body, deps, { caller })).rejects.toThrow(TooManyRuns);
    expect((await deps.runs.get('busy'))?.status).toBe('running');
  });

  it('refuses an Idempotency-Key sent again with another body', async () => {
    const deps = intake();
    await createRun(body, deps, { caller, idempotencyKey: 'k1' });
    await expect(createRun({ ...body, goal: 'Add 4 and 5.' }, deps, { caller, idempotencyKey: 'k1' })).rejects.toThrow(
      new IdempotencyConflict('This Idempotency-Key was used with a different request body.'),
    );
  });

  it('refuses a key that a racing request with another body claimed first, and writes no run', async () => {
    const idempotency = new MemoryIdempotency();
    // The racing request's claim lands between this request's look-up and its own claim.
    idempotency.get = async () => undefined;
    await idempotency.claim(`${ownerKey(owner)}:k1`, { runId: 'run-9', bodyHash: 'another body' });
    const deps = intake({ idempotency });
    await expect(createRun(body, deps, { caller, idempotencyKey: 'k1' })).rejects.toThrow(
      new IdempotencyConflict('This Idempotency-Key was used with a different request body.'),
    );
    expect(deps.runs.runs.size).toBe(0);
  });

  it('looks for an existing run only under an id the caller or an earlier request named', async () => {
    const deps = intake();
    const looked: string[] = [];
    const get = deps.runs.get.bind(deps.runs);
    deps.runs.get = (runId: string) => (looked.push(runId), get(runId));
    await createRun(body, deps, { caller });
    expect(looked).toEqual([]);
    await createRun(body, deps, { caller, runId: 'mine' });
    await createRun(body, deps, { caller, idempotencyKey: 'k1' });
    expect(looked).toEqual(['mine']);
    // The key's earlier run is looked for, and answered with.
    expect(await createRun(body, deps, { caller, idempotencyKey: 'k1' })).toEqual({ runId: 'run-2', status: 'running', phase: 'idle' });
    expect(looked).toEqual(['mine', 'run-2']);
  });

  it('marks the run failed when the orchestrator refuses to start it', async () => {
    const deps = intake();
    deps.starter.start = async () => {
      throw new Error('no such state machine');
    };
    await expect(createRun(body, deps, { caller })).rejects.toThrow('no such state machine');
    expect(deps.runs.runs.get('run-1')).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: { code: 'StartFailed', message: 'The run could not be started: no such state machine' },
    });
  });

  it('marks the run failed when the orchestrator refuses it for good with a named error', async () => {
    const deps = intake();
    deps.starter.start = async () => {
      throw new TooManyRuns('no');
    };
    await expect(createRun(body, deps, { caller })).rejects.toThrow('no');
    expect(deps.runs.runs.get('run-1')?.status).toBe('failed');
  });

  it('takes an Idempotency-Key as a plain request where the deployment keeps no keys', async () => {
    const deps = intake({ idempotency: undefined });
    expect(await createRun(body, deps, { caller, idempotencyKey: 'k1' })).toEqual({ runId: 'run-1', status: 'running', phase: 'idle' });
  });

  it('fails when the run can neither be created nor found', async () => {
    const deps = intake();
    deps.runs.create = async () => false;
    await expect(createRun(body, deps, { caller })).rejects.toThrow(new Error('Run run-1 could not be created.'));
  });

  it('leaves the run waiting to start after a transient fault, for a repeat to start', async () => {
    const deps = intake();
    deps.starter.start = async () => {
      throw new ModelUnavailable('throttled');
    };
    await expect(createRun(body, deps, { caller })).rejects.toThrow('throttled');
    expect(deps.runs.runs.get('run-1')).toMatchObject({ status: 'running', phase: 'idle' });
    expect(deps.runs.runs.get('run-1')?.error).toBeUndefined();
  });
});

describe('cancelRun', () => {
  it('cancels a running run, completes a cancel repeated after a failure, and refuses the rest', async () => {
    const deps = intake();
    await deps.runs.create(newRun('going', 'g'));
    await deps.runs.create(newRun('done', 'g', { status: 'succeeded', phase: 'complete' }));
    const answers = [];
    for (const runId of ['going', 'going', 'done', 'missing']) answers.push(await cancelRun(runId, deps));
    expect(answers).toEqual([true, true, false, false]);
    expect([deps.starter.stopped, deps.starter.announced]).toEqual([['going', 'going'], ['going']]);
  });
});

describe('bodyHash', () => {
  it('does not depend on the order of the body’s keys', () => {
    expect(bodyHash({ mode: 'single', maxIterations: 25, goal: 'Add 2 and 3.' })).toBe(bodyHash(body));
  });
});

describe('createRunBody', () => {
  it('says what is wrong with each refused field', () => {
    const parsed = createRunBody().safeParse({ goal: ' ', sessionId: 'a b', maxIterations: 0 });
    expect(parsed.error?.issues.map((i) => ({ path: i.path.join('.'), message: i.message }))).toEqual([
      { path: 'goal', message: 'must not be empty' },
      { path: 'sessionId', message: 'must be 1-128 letters, digits, ".", "_" or "-"' },
      { path: 'maxIterations', message: 'Too small: expected number to be >=1' },
      { path: 'sessionId', message: 'sessions continue one agent\'s conversation; name an agent (or mode "single") with a sessionId' },
    ]);
    const long = createRunBody().safeParse({ goal: 'x'.repeat(100_001) });
    expect(long.error?.issues.map((i) => i.message)).toEqual(['must be at most 100000 characters']);
  });
});

describe('intakeEvent', () => {
  function eventIntake(extra: Omit<Partial<IntakeDeps>, 'runs' | 'starter'> = {}) {
    const letters: Parameters<DeadLetters['send']>[0][] = [];
    const deps = { ...intake(extra), deadLetters: { send: async (letter: Parameters<DeadLetters['send']>[0]) => void letters.push(letter) } };
    return { deps, letters };
  }
  const requested = (detail: object, extra: object = {}) => ({
    'detail-type': 'Stepwise Run Requested',
    id: 'e-1',
    account: '123456789012',
    source: 'orders',
    detail: { goal: 'Add 2 and 3.', mode: 'single', ...detail },
    ...extra,
  });

  it('starts the run for the event’s source, named after the event so a redelivery starts it once', async () => {
    const { deps } = eventIntake();
    const event = requested({});
    expect([await intakeEvent(event, deps), await intakeEvent(event, deps)]).toEqual([
      { accepted: true, runId: 'evt-e-1' },
      { accepted: true, runId: 'evt-e-1' },
    ]);
    expect(deps.runs.runs.get('evt-e-1')?.owner).toEqual({ principal: 'event:123456789012:orders' });
  });

  it('names a run by a fresh id when the event’s id cannot name one', async () => {
    const { deps } = eventIntake();
    const outcomes = [];
    for (const id of ['has space', ' lead', 'trail ', 'x'.repeat(65)]) outcomes.push(await intakeEvent(requested({}, { id }), deps));
    expect(outcomes.map((o) => (o.accepted ? o.runId : o.reason))).toEqual(['run-1', 'run-2', 'run-3', 'run-4']);
  });

  it('files an event from nowhere known under an unknown account and source', async () => {
    const { deps } = eventIntake();
    await intakeEvent(requested({}, { account: '', source: undefined }), deps);
    expect(deps.runs.runs.get('evt-e-1')?.owner).toEqual({ principal: 'event:unknown:unknown' });
  });

  it('sends an event that is not a run request to the dead letters, naming the event', async () => {
    const { deps, letters } = eventIntake();
    const event = { 'detail-type': 'Something Else' };
    expect(await intakeEvent(event, deps)).toEqual({ accepted: false, reason: 'The event is not a valid Stepwise Run Requested request.' });
    expect(letters.map((l) => l.issues.map((i) => i.path))).toEqual([['detail-type', 'detail']]);
  });

  it('sends a run on behalf of another caller from an untrusted source to the dead letters', async () => {
    const { deps, letters } = eventIntake({ trustedSources: ['billing'] });
    const event = requested({ onBehalfOf: { principal: 'iss#bob' } });
    const reason = 'Source orders is not trusted to start runs on behalf of another caller.';
    expect(await intakeEvent(event, deps)).toEqual({ accepted: false, reason });
    expect(letters).toEqual([{ reason, issues: [{ path: 'detail.onBehalfOf', message: reason }], event }]);
    expect(deps.runs.runs.size).toBe(0);
  });

  it('sends a run id another caller took, and a run over the owner’s limit, to the dead letters with the reason', async () => {
    const { deps, letters } = eventIntake({ maxRunningRuns: 1 });
    await deps.runs.create(newRun('taken', 'g', { owner: { principal: 'iss#bob' }, status: 'succeeded' }));
    const outcomes = [];
    for (const runId of ['taken', 'first', 'second']) outcomes.push(await intakeEvent(requested({ runId }), deps));
    expect(outcomes.map((o) => o.accepted)).toEqual([false, true, false]);
    expect(letters.map(({ reason, issues }) => ({ reason, issues }))).toEqual([
      {
        reason: "The run id taken belongs to another caller's run; choose another.",
        issues: [{ path: 'detail.runId', message: "The run id taken belongs to another caller's run; choose another." }],
      },
      {
        reason: 'You have 1 runs running, the most this deployment allows; wait for one to end or cancel one.',
        issues: [{ path: '(event)', message: 'You have 1 runs running, the most this deployment allows; wait for one to end or cancel one.' }],
      },
    ]);
  });

  it('lets a fault that a redelivery may cure escape, for the event to be retried', async () => {
    const { deps, letters } = eventIntake();
    deps.slots.take = async () => {
      throw new ModelUnavailable('the table is throttled');
    };
    await expect(intakeEvent(requested({}), { ...deps, maxRunningRuns: 1 })).rejects.toThrow('the table is throttled');
    expect(letters).toEqual([]);
  });
});
