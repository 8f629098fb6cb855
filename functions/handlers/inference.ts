/** Lambda: one inference step of an agent loop, on the Anthropic API (or scripted); no Bedrock SDK in its bundle. */
import { modelWiring } from '../adapters/wiring-model.js';
import { anthropicFrom } from '../adapters/wiring-model-anthropic.js';
import { wire } from '../adapters/wiring.js';
import { type InferenceResult, InferenceInput, inferenceStep } from '../core/steps.js';
import { parseEvent } from './events.js';

const wiring = wire(process.env, { model: modelWiring({ anthropic: anthropicFrom }) });

/** Runs the step the state machine's Inference task sends. */
export async function handler(event: unknown): Promise<InferenceResult> {
  return inferenceStep(parseEvent(InferenceInput, event), wiring);
}
