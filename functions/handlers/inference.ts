/** Lambda: one inference step of an agent loop, on the Anthropic API (or scripted); no Bedrock SDK in its bundle. */
import { inferenceHandler } from './inference-step.js';
import { anthropicFrom } from '../adapters/wiring-model-anthropic.js';
import { modelWiring } from '../adapters/wiring-model.js';

/** Runs the step the state machine's Inference task sends. */
export const handler = inferenceHandler(modelWiring({ anthropic: anthropicFrom }));
