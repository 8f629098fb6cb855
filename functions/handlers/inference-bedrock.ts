/** Lambda: one inference step of an agent loop, on Amazon Bedrock (or scripted); no Anthropic key or Secrets Manager in its bundle. */
import { modelWiring } from '../adapters/wiring-model.js';
import { bedrockFrom } from '../adapters/wiring-model-bedrock.js';
import { wire } from '../adapters/wiring.js';
import { type InferenceResult, InferenceInput, inferenceStep } from '../core/steps.js';
import { parseEvent } from './events.js';

const wiring = wire(process.env, { model: modelWiring({ bedrock: bedrockFrom }) });

/** Runs the step the state machine's Inference task sends. */
export async function handler(event: unknown): Promise<InferenceResult> {
  return inferenceStep(parseEvent(InferenceInput, event), wiring);
}
