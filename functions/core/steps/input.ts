/**
 * A step's event, parsed with its schema: the state machine sent it, so a bad one is a definition bug.
 */
import type * as z from 'zod';
import { named } from '../errors/errors.js';
import { describeIssues } from '../tools/registry.js';

/** The state machine sent a step an event it cannot use: a definition bug, never retried. */
export class InvalidStepInput extends named('InvalidStepInput') {}

/** Parses a Lambda event with its schema, or fails with a named error that says what is wrong. */
export function parseEvent<Schema extends z.ZodType>(schema: Schema, event: unknown): z.infer<Schema> {
  const parsed = schema.safeParse(event);
  if (!parsed.success) throw new InvalidStepInput(`The step input is invalid: ${describeIssues(parsed.error)}`);
  return parsed.data;
}
