/**
 * What the Lambda bundles carry: a deployment picks one model provider, and its inference
 * function bundles only that provider's SDK (lib/stepwise-stack.ts picks the entry); the API and
 * stream functions carry nothing of the local server. esbuild is run with the options the CDK
 * runs it with (lib/bundling.ts), without writing, and its metafile says what made it into the
 * output.
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

describe('the API bundles', () => {
  /** The folders of the project's own modules in the bundle of `functions/handlers/<entry>.ts`, and whether it names a `/_local/` route. */
  async function bundled(entry: string): Promise<{ folders: string[]; localRoutes: boolean }> {
    const { metafile, outputFiles } = await build({ ...esbuildOptionsOf(entry), outfile: `${entry}.mjs`, write: false, metafile: true, logLevel: 'silent' });
    const folders = Object.keys(metafile.inputs)
      .filter((path) => !path.includes('node_modules/'))
      .map((path) => path.split('/')[0] ?? '');
    return { folders: [...new Set(folders)].sort(), localRoutes: outputFiles.some((file) => file.text.includes('/_local/')) };
  }

  it('carry no module of the local server: not its /_local/* routes, not its stand-ins', async () => {
    expect(await bundled('api')).toEqual({ folders: ['functions'], localRoutes: false });
    expect(await bundled('stream')).toEqual({ folders: ['functions'], localRoutes: false });
  });
});
