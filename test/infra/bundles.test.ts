/**
 * What the inference bundles carry: a deployment picks one model provider, and its inference
 * function bundles only that provider's SDK (lib/stepwise-stack.ts picks the entry). esbuild is
 * run with the options the CDK runs it with (lib/bundling.ts), without writing, and its metafile
 * says which packages made it into the output.
 */
import { build } from 'esbuild';
import { esbuildOptionsOf } from '../../lib/bundling.js';
import { describe, expect, it } from 'vitest';

/** The provider SDKs, and the key's path, whose presence in a bundle is the question. */
const providerPackages = ['@anthropic-ai/bedrock-sdk', '@anthropic-ai/sdk', '@aws-lambda-powertools/parameters', '@aws-sdk/client-secrets-manager'];

/** The watched packages with code in the bundle of `functions/handlers/<entry>.ts`. */
async function bundledProviderPackages(entry: string): Promise<string[]> {
  const { metafile } = await build({
    ...esbuildOptionsOf(entry),
    outfile: `${entry}.mjs`,
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const found = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [path, input] of Object.entries(output.inputs)) {
      const name = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path)?.[1];
      if (name && input.bytesInOutput > 0 && providerPackages.includes(name)) found.add(name);
    }
  }
  return [...found].sort();
}

describe('inference bundles', () => {
  it('the default one (Anthropic API, scripted) carries no Bedrock SDK', async () => {
    expect(await bundledProviderPackages('inference')).toEqual([
      '@anthropic-ai/sdk',
      '@aws-lambda-powertools/parameters',
      '@aws-sdk/client-secrets-manager',
    ]);
  });

  it('the Bedrock one carries no Secrets Manager client, only the Bedrock SDK on the Anthropic one it extends', async () => {
    expect(await bundledProviderPackages('inference-bedrock')).toEqual(['@anthropic-ai/bedrock-sdk', '@anthropic-ai/sdk']);
  });
});
