/**
 * The workflow properties of invariant 8 (docs/ARCHITECTURE.md), checked on generated scenarios run through the
 * synthesized orchestrator and agent loops: Architect before Coder with the plan handed over,
 * phases that only move forward, and failures that stop the run naming the agent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Reply } from '../../local/stand-ins/messages-api.js';
import type { Run } from '../../functions/core/runs/types.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();

const plan = { goal: 'Write notes', steps: [{ description: 'Write notes.md', action: 'create_file', parameters: { path: 'notes.md' } }] };
const badRequest: Reply = { status: 400, type: 'invalid_request_error', message: 'scripted failure' };
const maxIterations = 4;

const scenario = fc.record({
  invalidPlans: fc.integer({ min: 0, max: 2 }),
  architect: fc.constantFrom('plan', 'noPlan', 'modelError'),
  coderTurns: fc.integer({ min: 0, max: 2 }),
  coder: fc.constantFrom('done', 'modelError', 'limit'),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function script(s: Scenario): Reply[] {
  const replies: Reply[] = [];
  for (let i = 0; i < s.invalidPlans; i++) replies.push({ turn: use([`toolu_bad${i}`, 'finish_plan', { goal: '', steps: [] }]) });
  if (s.architect === 'noPlan') return [...replies, { turn: say('No plan from me.') }];
  if (s.architect === 'modelError') return [...replies, badRequest];
  replies.push({ turn: use(['toolu_plan', 'finish_plan', plan]) });
  if (s.coder === 'limit') {
    for (let i = 0; i < maxIterations; i++) replies.push({ turn: use([`toolu_l${i}`, 'list_files', {}]) });
    return replies;
  }
  for (let i = 0; i < s.coderTurns; i++) replies.push({ turn: use([`toolu_w${i}`, 'write_file', { path: `f${i}.txt`, content: 'x' }]) });
  return [...replies, s.coder === 'done' ? { turn: say('Done.') } : badRequest];
}

function expectedOutcome(s: Scenario): Pick<Run, 'status' | 'phase'> & { code?: string; agent?: string } {
  // At most 2 invalid plans + 1 valid one: the Architect stays within maxIterations.
  if (s.architect === 'noPlan') return { status: 'failed', phase: 'failed', code: 'NoPlanProduced', agent: 'architect' };
  if (s.architect === 'modelError') return { status: 'failed', phase: 'failed', code: 'ModelRequestInvalid', agent: 'architect' };
  if (s.coder === 'limit') return { status: 'failed', phase: 'failed', code: 'MaxIterationsExceeded', agent: 'coder' };
  if (s.coder === 'modelError') return { status: 'failed', phase: 'failed', code: 'ModelRequestInvalid', agent: 'coder' };
  return { status: 'succeeded', phase: 'complete' };
}

const phaseOfState: Record<string, number> = { MarkArchitect: 1, MarkCoder: 2, MarkComplete: 3, MarkFailed: 3, NoPlanProduced: 3 };
let counter = 0;

describe('the multi-agent workflow', () => {
  it('keeps its properties on any scenario', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const name = `wf-${counter++}`;
        const tag = local.book.add(name, ...script(s));
        const started = await local.post('/runs', { goal: `${tag} Write notes.`, maxIterations });
        const run = await local.waitFor(String(started.body.runId));
        const expected = expectedOutcome(s);

        // The run ends as the scenario dictates, naming the failing agent.
        expect({ status: run.status, phase: run.phase, code: run.error?.code, agent: run.error?.agent }).toEqual({
          status: expected.status,
          phase: expected.phase,
          code: expected.code,
          agent: expected.agent,
        });

        // The Architect works before the Coder, and the Coder's first message carries the plan.
        const requests = local.book.requests.get(name) ?? [];
        const roles = requests.map((r) => (JSON.stringify(r.tools).includes('finish_plan') ? 'architect' : 'coder'));
        const firstCoder = roles.indexOf('coder');
        if (firstCoder >= 0) {
          expect(roles.slice(firstCoder)).not.toContain('architect');
          expect(JSON.stringify(requests[firstCoder]?.messages[0])).toContain('[create_file] Write notes.md');
          expect(run.plan).toEqual(plan);
        }
        if (expected.agent === 'architect') expect(firstCoder).toBe(-1);

        // Phases only move forward, and nothing runs after a failure is recorded.
        const orchestrator = local.stack.runtime.list().find((e) => e.name === run.runId);
        const phases = (orchestrator?.trail ?? []).flatMap((state) => (state in phaseOfState ? [phaseOfState[state] as number] : []));
        expect(phases).toEqual([...phases].sort((a, b) => a - b));
        const failedAt = orchestrator?.trail.indexOf('MarkFailed') ?? -1;
        if (failedAt >= 0) expect(orchestrator?.trail.slice(failedAt)).toEqual(['MarkFailed', 'LoadFailedUsage', 'EmitFailed', 'RunFailed']);
      }),
      { numRuns: 64 },
    );
  }, 300_000);
});
