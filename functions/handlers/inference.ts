/** Lambda: one inference step of an agent loop. */
import { modelFrom } from '../adapters/wiring-model.js';
import { wire } from '../adapters/wiring.js';
import { type InferenceResult, InferenceInput, inferenceStep } from '../core/steps.js';
import { parseEvent } from './events.js';

const wiring = wire(process.env, { model: modelFrom });

export async function handler(event: unknown): Promise<InferenceResult> {
  return inferenceStep(parseEvent(InferenceInput, event), wiring);
}
