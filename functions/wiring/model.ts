/**
 * Wiring of the model provider, shared by every inference bundle and free of provider SDKs. A
 * deployment picks one provider, and its inference function bundles only that provider's wiring
 * (`model-anthropic.ts` or `model-bedrock.ts` beside this file), so neither SDK rides along unused.
 */
import { type ModelProvider, ModelNotConfigured } from '../core/model/types.js';
import { ScriptedModel } from '../adapters/model/scripted.js';
import type { Env } from './wire.js';

/** Builds one provider from the validated environment. */
export type ProviderWiring = (env: Env) => ModelProvider;

/** The SDK-backed providers a bundle carries; the scripted one needs no SDK and is always there. */
export type BundledProviders = Partial<Record<Exclude<Env['STEPWISE_PROVIDER'], 'scripted'>, ProviderWiring>>;

/**
 * The configured provider out of those given. A provider, or a key, that is missing is reported
 * when the model is first called, on the run, as `ModelNotConfigured`.
 */
export function modelWiring(bundled: BundledProviders): ProviderWiring {
  return (env) => {
    if (env.STEPWISE_PROVIDER === 'scripted') {
      if (!env.STEPWISE_SCRIPT) return unconfigured('STEPWISE_PROVIDER=scripted needs STEPWISE_SCRIPT, the path of a JSON script of turns.');
      return ScriptedModel.fromFile(env.STEPWISE_SCRIPT);
    }
    const wiring = bundled[env.STEPWISE_PROVIDER];
    if (wiring) return wiring(env);
    // Only a function built for another provider gets here: the stack picks the handler by provider.
    const carried = ['scripted', ...Object.keys(bundled)].join(', ');
    return unconfigured(`STEPWISE_PROVIDER=${env.STEPWISE_PROVIDER}, but this function bundles only the ${carried} providers.`);
  };
}

/** A provider that fails every call with `ModelNotConfigured` and the given message. */
export function unconfigured(message: string): ModelProvider {
  return {
    generate: () => Promise.reject(new ModelNotConfigured(message)),
  };
}
