/** Wiring of the model provider (only the inference function bundles the Anthropic and Bedrock SDKs). */
import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
import { type ModelProvider, ModelNotConfigured } from '../core/model.js';
import { AnthropicProvider } from './anthropic.js';
import { BedrockProvider } from './bedrock.js';
import { ScriptedModel } from './scripted.js';
import { type Env, localCredentials } from './wiring.js';

/** The configured provider. A missing key is reported when the model is first called, on the run. */
export function modelFrom(env: Env): ModelProvider {
  switch (env.STEPWISE_PROVIDER) {
    case 'scripted':
      if (!env.STEPWISE_SCRIPT) return unconfigured('STEPWISE_PROVIDER=scripted needs STEPWISE_SCRIPT, the path of a JSON script of turns.');
      return ScriptedModel.fromFile(env.STEPWISE_SCRIPT);
    case 'bedrock':
      return bedrockFrom(env);
    case 'anthropic':
      if (env.ANTHROPIC_API_KEY_SECRET_ARN) {
        const secretArn = env.ANTHROPIC_API_KEY_SECRET_ARN;
        return new AnthropicProvider({
          apiKey: () => readSecret(secretArn),
          ...(env.ANTHROPIC_BASE_URL ? { baseURL: env.ANTHROPIC_BASE_URL } : {}),
          timeoutMs: env.STEPWISE_MODEL_TIMEOUT_MS,
          maxRetries: env.STEPWISE_MODEL_MAX_RETRIES,
        });
      }
      if (!env.ANTHROPIC_API_KEY) {
        return unconfigured('No Anthropic API key: set ANTHROPIC_API_KEY, or STEPWISE_PROVIDER=scripted with STEPWISE_SCRIPT for offline runs.');
      }
      return new AnthropicProvider({
        apiKey: env.ANTHROPIC_API_KEY,
        ...(env.ANTHROPIC_BASE_URL ? { baseURL: env.ANTHROPIC_BASE_URL } : {}),
        timeoutMs: env.STEPWISE_MODEL_TIMEOUT_MS,
        maxRetries: env.STEPWISE_MODEL_MAX_RETRIES,
      });
  }
}

/**
 * Claude on Bedrock: signed with the default AWS credential chain (the function's role when
 * deployed); no API key is read. Against the local stand-in, with the emulators' fixed pair.
 */
function bedrockFrom(env: Env): ModelProvider {
  const local = env.STEPWISE_BEDROCK_ENDPOINT;
  return new BedrockProvider({
    region: env.AWS_REGION,
    credentials: local ? () => Promise.resolve(localCredentials) : fromNodeProviderChain(),
    ...(local ? { baseURL: local } : {}),
    timeoutMs: env.STEPWISE_MODEL_TIMEOUT_MS,
    maxRetries: env.STEPWISE_MODEL_MAX_RETRIES,
  });
}

/** A secret's string value, cached by Powertools for the Lambda's lifetime (refreshed hourly). */
async function readSecret(secretArn: string): Promise<string> {
  const { getSecret } = await import('@aws-lambda-powertools/parameters/secrets');
  const value = await getSecret(secretArn, { maxAge: 3600 });
  if (typeof value !== 'string' || !value.trim()) throw new ModelNotConfigured(`The secret ${secretArn} holds no API key.`);
  return value.trim();
}

function unconfigured(message: string): ModelProvider {
  return {
    generate: () => Promise.reject(new ModelNotConfigured(message)),
  };
}
