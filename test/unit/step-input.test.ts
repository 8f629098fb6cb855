import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { InvalidStepInput, parseEvent } from '../../functions/core/steps/input.js';

describe('parseEvent', () => {
  const schema = z.object({ runId: z.string().min(1), iteration: z.number() });

  it('returns an event its schema accepts, and refuses another naming each wrong field', () => {
    expect(parseEvent(schema, { runId: 'run-1', iteration: 0 })).toEqual({ runId: 'run-1', iteration: 0 });
    expect(() => parseEvent(schema, { runId: '' })).toThrow(
      new InvalidStepInput(
        'The step input is invalid: runId: Too small: expected string to have >=1 characters; iteration: Invalid input: expected number, received undefined',
      ),
    );
  });
});
