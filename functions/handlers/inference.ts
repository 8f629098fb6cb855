/** Lambda: one inference step of an agent loop, on the Anthropic API (or scripted); no Bedrock SDK in its bundle. */
import { inferenceHandler } from '../wiring/inference.js';
import { anthropicFrom } from '../wiring/model-anthropic.js';
import { modelWiring } from '../wiring/model.js';

/** Runs the step the state machine's Inference task sends. */
export const handler = inferenceHandler(modelWiring({ anthropic: anthropicFrom }));
