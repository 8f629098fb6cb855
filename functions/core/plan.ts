/**
 * The Architect's plan: its schema, JSON round trip, and parsing with errors that name the
 * position or field that is wrong.
 */
import { type ParseError, parse as parseTolerant, printParseErrorCode } from 'jsonc-parser';
import * as z from 'zod';

/** A non-empty string, checked without trimming it: parsing never rewrites the plan. */
const text = () => z.string().refine((s) => s.trim().length > 0, 'must not be empty');

export const PlanStep = z
  .object({
    description: text().describe('What this step achieves, in one or two sentences.'),
    action: text().describe('The kind of work, e.g. "create_file", "edit_file", "verify".'),
    parameters: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Details the Coder needs, e.g. { "path": "src/app.ts" }.'),
  })
  .strict();
export type PlanStep = z.infer<typeof PlanStep>;

/**
 * The plan travels inline in the run record and in the orchestrator's state (`$.planRecord`), so it
 * is bounded (invariant 1, docs/ARCHITECTURE.md): at most 100 steps and 32 KiB of JSON, far below
 * the 256 KB state payload and the 400 KB item.
 */
export const planLimits = { maxSteps: 100, maxBytes: 32 * 1024 } as const;

export const Plan = z
  .object({
    goal: text().describe('The goal the plan achieves, restated precisely.'),
    steps: z
      .array(PlanStep)
      .min(1, 'must have at least one step')
      .max(planLimits.maxSteps, `must have at most ${planLimits.maxSteps} steps; merge small steps`)
      .describe('The steps, in the order to carry them out.'),
  })
  .strict()
  .superRefine((plan, ctx) => {
    const bytes = Buffer.byteLength(JSON.stringify(plan), 'utf8');
    if (bytes > planLimits.maxBytes) {
      ctx.addIssue({
        code: 'custom',
        message: `the plan is ${bytes} bytes of JSON, over the ${planLimits.maxBytes}-byte limit; shorten the descriptions and parameters, or merge steps`,
      });
    }
  });
export type Plan = z.infer<typeof Plan>;

/** The plan as JSON text. */
export function planToJSON(plan: Plan): string {
  return JSON.stringify(plan);
}

export type ParsedPlan = { ok: true; plan: Plan } | { ok: false; errors: string[] };

/** Field errors as `steps.1.action: must not be empty`. */
export function planErrors(error: z.ZodError): string[] {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(plan)'}: ${i.message}`);
}

/** Parses plan JSON; bad JSON names the position, a bad shape names each field. */
export function parsePlan(text: string): ParsedPlan {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, errors: syntaxErrors(text) };
  }
  const parsed = Plan.safeParse(value);
  return parsed.success ? { ok: true, plan: parsed.data } : { ok: false, errors: planErrors(parsed.error) };
}

/** Where JSON text goes wrong, as `invalid JSON at line 1, column 25 (offset 24): ValueExpected`. */
function syntaxErrors(source: string): string[] {
  const errors: ParseError[] = [];
  parseTolerant(source, errors, { disallowComments: true, allowTrailingComma: false });
  const first = errors[0];
  if (!first) return ['invalid JSON'];
  const before = source.slice(0, first.offset).split('\n');
  const line = before.length;
  const column = (before.at(-1)?.length ?? 0) + 1;
  return [`invalid JSON at line ${line}, column ${column} (offset ${first.offset}): ${printParseErrorCode(first.error)}`];
}

/** The plan as the Coder reads it. */
export function renderPlan(plan: Plan): string {
  const steps = plan.steps.map((step, i) => {
    const params = step.parameters && Object.keys(step.parameters).length ? `\n   parameters: ${JSON.stringify(step.parameters)}` : '';
    return `${i + 1}. [${step.action}] ${step.description}${params}`;
  });
  return `Goal: ${plan.goal}\n\nSteps:\n${steps.join('\n')}`;
}
