/**
 * The chaos run, CI-sized: 20 runs through the local stack under seeded faults (model errors and
 * dropped connections, steps crashing after their write, throttled stores, stopped executions,
 * redelivered events). Afterwards every run has ended (succeeded, failed with a named error, or
 * cancelled), every transcript is contiguous with each tool call answered exactly once, no step
 * called the model twice for one stored answer, no session is left locked, and every invalid
 * event is dead-lettered with its reason, and a step whose retries are spent says so, with its cause. `npm run bench` runs the same with 200 runs.
 */
import { describe, expect, it } from 'vitest';
import { wire } from '../../functions/wiring/wire.js';
import { Chaos, chaosReport, chaosRun } from '../support/chaos.js';
import { useLocalStack } from '../support/local-stack.js';

const chaos = new Chaos({ runs: 20, seed: 7, modelFault: 0.25, crash: 0.15, throttle: 0.1, stop: 0.15, redeliver: 0.3, invalidEvents: 3, exhausted: 1 });
const local = useLocalStack({}, { wrapHandler: chaos.wrap });

describe('the chaos run', () => {
  it('leaves nothing stuck, lost or duplicated under injected faults', async () => {
    const outcome = await chaosRun(local, chaos, wire(process.env).conversations);
    console.info(`\n${chaosReport(chaos, outcome)}`);
    expect(outcome.problems).toEqual([]);
    expect({ lost: outcome.lost, duplicated: outcome.duplicated, stuck: outcome.stuck, extraModelCalls: outcome.extraModelCalls, lockedSessions: outcome.lockedSessions }).toEqual({
      lost: 0,
      duplicated: 0,
      stuck: 0,
      extraModelCalls: 0,
      lockedSessions: 0,
    });
    expect(outcome.deadLettered).toBe(3);
    // A step that crashed on every attempt: the run names the spent retries and their cause, not Lambda.Unknown.
    expect(outcome.outcomes['failed RetriesExhausted']).toBe(1);
    for (const run of outcome.runs) expect(['succeeded', 'failed', 'cancelled']).toContain(run.status);
    // The faults really happened: a chaos run without chaos proves nothing.
    for (const [kind, n] of chaos.injected) expect({ kind, injected: n > 0 }).toEqual({ kind, injected: true });
  }, 300_000);
});
