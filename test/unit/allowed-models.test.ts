import { describe, expect, it } from 'vitest';
import { type DeadLetters } from '../../functions/core/intake/types.js';
import { intakeEvent } from '../../functions/core/intake/events.js';
import { RecordingStarter, memoryApi } from '../support/api.js';
import { MemoryRunStore } from '../support/memory.js';

const goal = 'Write a haiku about queues.';
const allowedModels = ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'us.anthropic.claude-haiku-4-5-20251001-v1:0'];

describe('POST /runs on a deployment that lists its models', () => {
  it('starts a run on an allowed model', async () => {
    const api = memoryApi({ allowedModels });
    const res = await api.request('POST', '/runs', { goal, mode: 'single', model: allowedModels[1] });
    expect(res.status).toBe(202);
    expect(api.starter.started.map((s) => s.model)).toEqual([allowedModels[1]]);
  });

  it('starts a run without a model on the deployment’s own', async () => {
    const api = memoryApi({ allowedModels });
    expect((await api.request('POST', '/runs', { goal })).status).toBe(202);
    expect(api.starter.started.map((s) => s.model)).toEqual(['']);
  });

  it('refuses another model with a 400 naming model and the allowed list, and writes nothing', async () => {
    const api = memoryApi({ allowedModels });
    const res = await api.request('POST', '/runs', { goal, model: 'anthropic.claude-opus-4-1-20250805-v1:0' });
    expect(res).toEqual({
      status: 400,
      body: {
        error: {
          code: 'ValidationFailed',
          message: 'The body is invalid.',
          issues: [{ path: 'model', message: `must be one of the models this deployment allows: ${allowedModels.join(', ')}` }],
        },
      },
    });
    expect(api.writes()).toBe(0);
  });

  it('names the model alongside the other bad fields', async () => {
    const res = await memoryApi({ allowedModels }).request('POST', '/runs', { goal: '', model: 'other' });
    expect(res.body.error?.issues?.map((i) => i.path).sort()).toEqual(['goal', 'model']);
  });

  it('takes any model when the deployment names none', async () => {
    const api = memoryApi();
    expect((await api.request('POST', '/runs', { goal, model: 'claude-anything' })).status).toBe(202);
  });
});

describe('intakeEvent on a deployment that lists its models', () => {
  it('sends a request for another model to the dead letters, naming detail.model and the list, and starts nothing', async () => {
    const letters: Parameters<DeadLetters['send']>[0][] = [];
    const starter = new RecordingStarter();
    const runs = new MemoryRunStore();
    const event = { 'detail-type': 'Stepwise Run Requested', detail: { goal, model: 'claude-3-opus' } };

    const outcome = await intakeEvent(event, { runs, starter, newId: () => 'run-1', allowedModels, deadLetters: { send: async (l) => void letters.push(l) } });

    expect(outcome).toEqual({ accepted: false, reason: 'The event is not a valid Stepwise Run Requested request.' });
    expect(letters).toEqual([
      {
        reason: 'The event is not a valid Stepwise Run Requested request.',
        issues: [{ path: 'detail.model', message: `must be one of the models this deployment allows: ${allowedModels.join(', ')}` }],
        event,
      },
    ]);
    expect([starter.started, runs.runs.size]).toEqual([[], 0]);
  });
});
