/** Wiring of the Bedrock provider: no API key, requests signed with AWS credentials. */
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { ModelProvider } from '../core/model/types.js';
import { BedrockProvider } from '../adapters/model/bedrock.js';
import { type Env, localCredentials } from './wire.js';

/**
 * Claude on Bedrock: signed with the default AWS credential chain (the function's role when
 * deployed); no API key is read. Against the local stand-in, with the emulators' fixed pair.
 */
export function bedrockFrom(env: Env): ModelProvider {
  const local = env.STEPWISE_BEDROCK_ENDPOINT;
  return new BedrockProvider({
    region: env.AWS_REGION,
    credentials: local ? () => Promise.resolve(localCredentials) : defaultProvider(),
    ...(local ? { baseURL: local } : {}),
    timeoutMs: env.STEPWISE_MODEL_TIMEOUT_MS,
    maxRetries: env.STEPWISE_MODEL_MAX_RETRIES,
  });
}
