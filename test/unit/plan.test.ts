import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Plan } from '../../functions/core/plan/types.js';
import { parsePlan, planToJSON, renderPlan } from '../../functions/core/plan/plan.js';

const text = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).filter((s) => s.trim().length > 0);
const step = fc.record(
  {
    description: text,
    action: text,
    parameters: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue(), { maxKeys: 3 }),
  },
  { requiredKeys: ['description', 'action'] },
);
const plan: fc.Arbitrary<Plan> = fc.record({ goal: text, steps: fc.array(step, { minLength: 1, maxLength: 6 }) });

describe('Plan', () => {
  it('round-trips through JSON without loss', () => {
    fc.assert(
      fc.property(plan, (p) => {
        const parsed = parsePlan(planToJSON(p));
        expect(parsed).toEqual({ ok: true, plan: JSON.parse(JSON.stringify(p)) });
      }),
      { numRuns: 200 },
    );
  });

  it('names the field that is wrong', () => {
    type Breakage = [string, (p: Plan) => unknown];
    const breakages: Breakage[] = [
      ['goal: must not be empty', (p) => ({ ...p, goal: '  ' })],
      ['goal: Invalid input: expected string, received undefined', ({ goal: _goal, ...rest }) => rest],
      ['steps: must have at least one step', (p) => ({ ...p, steps: [] })],
      ['steps.0.description: must not be empty', (p) => ({ ...p, steps: [{ ...p.steps[0], description: '' }, ...p.steps.slice(1)] })],
      ['steps.0.action: Invalid input: expected string, received number', (p) => ({ ...p, steps: [{ ...p.steps[0], action: 7 }, ...p.steps.slice(1)] })],
    ];
    fc.assert(
      fc.property(plan, fc.constantFrom(...breakages), (p, [expected, breakIt]) => {
        const parsed = parsePlan(JSON.stringify(breakIt(p)));
        expect(parsed.ok).toBe(false);
        if (!parsed.ok) expect(parsed.errors).toContain(expected);
      }),
      { numRuns: 200 },
    );
  });

  it('names the position of a JSON syntax error', () => {
    const parsed = parsePlan('{"goal": "x", "steps": [}');
    expect(parsed.ok).toBe(false);
    expect(parsed).toEqual({ ok: false, errors: ['invalid JSON at line 1, column 25 (offset 24): ValueExpected'] });
    expect(parsePlan('{\n  "goal": "x",\n  "steps": [1,]\n}')).toEqual({
      ok: false,
      errors: ['invalid JSON at line 3, column 15 (offset 31): ValueExpected'],
    });
  });

  it('names a comment or a trailing comma as the JSON error it is', () => {
    expect([parsePlan('{"goal": "x" // c\n}'), parsePlan('{"goal": "x",}')]).toEqual([
      { ok: false, errors: ['invalid JSON at line 1, column 14 (offset 13): InvalidCommentToken'] },
      { ok: false, errors: ['invalid JSON at line 1, column 14 (offset 13): PropertyNameExpected'] },
    ]);
  });

  it('refuses fields it does not know', () => {
    expect(parsePlan(JSON.stringify({ goal: 'g', steps: [{ description: 'd', action: 'a' }], extra: 1 }))).toEqual({
      ok: false,
      errors: ['(plan): Unrecognized key: "extra"'],
    });
  });

  it('renders every step for the Coder, in order', () => {
    expect(renderPlan({ goal: 'G', steps: [{ description: 'one', action: 'create_file', parameters: { path: 'a' } }, { description: 'two', action: 'verify' }] })).toBe(
      'Goal: G\n\nSteps:\n1. [create_file] one\n   parameters: {"path":"a"}\n2. [verify] two',
    );
  });
});
