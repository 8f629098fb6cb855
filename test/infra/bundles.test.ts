/**
 * What the Lambda bundles carry: a deployment picks one model provider, and its inference
 * function bundles only that provider's SDK (lib/stepwise-stack.ts picks the entry); the API and
 * stream functions carry nothing of the local server. esbuild is run with the options the CDK
 * runs it with (lib/bundling.ts), without writing, and its metafile says what made it into the
 * output.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { definitionsDefine } from '../../lib/agent-definitions.js';
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

describe('the definitions bundled into the functions that start runs', () => {
  it('are what the wiring reads when the function loads, with no variable set', async () => {
    const triage = { name: 'triage', description: 'Sorts issues.', instructions: 'Sort the issues by "urgency", then `age`; $HOME is no variable here.', tools: ['calculator'] };
    const review = { name: 'review', description: 'Triage alone.', steps: ['triage'] };
    const { entryPoints: _api, ...options } = esbuildOptionsOf('api', definitionsDefine({ agents: [triage], workflows: [review] }));
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-define-'));
    try {
      const outfile = join(dir, 'agents.mjs');
      // The module the functions read their catalog from, bundled as the API function is.
      await build({ ...options, stdin: { contents: "export { agentCatalogOf } from './functions/wiring/agents.ts';", resolveDir: process.cwd(), loader: 'ts' }, outfile, logLevel: 'silent' });
      const { agentCatalogOf } = (await import(pathToFileURL(outfile).href)) as {
        agentCatalogOf: (env: object, source?: object) => { agentNames(): string[]; workflowNames(): string[]; agent(name: string): unknown };
      };
      const catalog = agentCatalogOf({ STEPWISE_MCP_SERVER_NAMES: [], STEPWISE_LAMBDA_TOOL_NAMES: [] }, {});
      expect(catalog.agentNames()).toEqual(['assistant', 'architect', 'coder', 'triage']);
      expect(catalog.workflowNames()).toEqual(['plan-and-build', 'review']);
      expect(catalog.agent('triage')).toEqual(triage);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('are none for a deployment without definitions, so its bundles stay as they were', () => {
    expect(definitionsDefine({ agents: [], workflows: [] })).toEqual({});
    expect(esbuildOptionsOf('api', definitionsDefine({}))).toEqual(esbuildOptionsOf('api'));
    expect(Object.keys(esbuildOptionsOf('api'))).not.toContain('define');
  });
});
