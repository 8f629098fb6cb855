/** Wiring of the Anthropic API provider: the key from the environment (local) or Secrets Manager (deployed). */
import { type ModelProvider, ModelNotConfigured } from '../core/model/types.js';
import { AnthropicProvider } from '../adapters/model/anthropic.js';
import { unconfigured } from './model.js';
import type { Env } from './wire.js';

/** Claude on the Anthropic API. A missing key is reported when the model is first called, on the run. */
export function anthropicFrom(env: Env): ModelProvider {
  const transport = {
    ...(env.ANTHROPIC_BASE_URL ? { baseURL: env.ANTHROPIC_BASE_URL } : {}),
    timeoutMs: env.STEPWISE_MODEL_TIMEOUT_MS,
    maxRetries: env.STEPWISE_MODEL_MAX_RETRIES,
  };
  if (env.ANTHROPIC_API_KEY_SECRET_ARN) {
    const secretArn = env.ANTHROPIC_API_KEY_SECRET_ARN;
    return new AnthropicProvider({ apiKey: () => readSecret(secretArn), ...transport });
  }
  if (!env.ANTHROPIC_API_KEY) {
    return unconfigured('No Anthropic API key: set ANTHROPIC_API_KEY, or STEPWISE_PROVIDER=scripted with STEPWISE_SCRIPT for offline runs.');
  }
  return new AnthropicProvider({ apiKey: env.ANTHROPIC_API_KEY, ...transport });
}

/** A secret's string value, cached by Powertools for the Lambda's lifetime (refreshed hourly). */
async function readSecret(secretArn: string): Promise<string> {
  const { getSecret } = await import('@aws-lambda-powertools/parameters/secrets');
  const value = await getSecret(secretArn, { maxAge: 3600 });
  if (typeof value !== 'string' || !value.trim()) throw new ModelNotConfigured(`The secret ${secretArn} holds no API key.`);
  return value.trim();
}
