/**
 * How an agent loop ends other than by finishing: named for the state machine's `Catch`.
 */
import { named } from '../errors/errors.js';

export class MaxIterationsExceeded extends named('MaxIterationsExceeded') {}

export class ModelRefused extends named('ModelRefused') {}
