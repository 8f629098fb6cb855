/**
 * Reading and writing plans: parse a plan the model wrote (tolerating JSON with comments), name
 * what is wrong with one, and render one for the Coder.
 */
import { type ParseError, parse as parseTolerant, printParseErrorCode } from 'jsonc-parser';
import type * as z from 'zod';
import { type ParsedPlan, Plan } from './types.js';

/** The plan as JSON text. */
export function planToJSON(plan: Plan): string {
  return JSON.stringify(plan);
}

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
