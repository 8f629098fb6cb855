/** Lambda: one inference step of an agent loop, on Amazon Bedrock (or scripted); no Anthropic key or Secrets Manager in its bundle. */
import { inferenceHandler } from '../wiring/inference.js';
import { bedrockFrom } from '../wiring/model-bedrock.js';
import { modelWiring } from '../wiring/model.js';

/** Runs the step the state machine's Inference task sends. */
export const handler = inferenceHandler(modelWiring({ bedrock: bedrockFrom }));
