/**
 * The Architect's plan: its schema and limits.
 */
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

export type ParsedPlan = { ok: true; plan: Plan } | { ok: false; errors: string[] };
