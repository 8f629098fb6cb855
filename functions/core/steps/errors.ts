/**
 * How an agent loop ends other than by finishing: named for the state machine's `Catch`.
 */
import { StepwiseError } from '../errors/errors.js';

export class MaxIterationsExceeded extends StepwiseError {
  override readonly name = 'MaxIterationsExceeded';
}

export class ModelRefused extends StepwiseError {
  override readonly name = 'ModelRefused';
}
