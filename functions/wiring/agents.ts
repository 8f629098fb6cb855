/**
 * The deployment's agents and workflows (docs/agents.md): JSON arrays in `STEPWISE_AGENTS` and
 * `STEPWISE_WORKFLOWS` (inline, or `@<path>` to a JSON file, for `npm run dev`), or bundled into
 * the function's code by the CDK construct (a Lambda's environment holds 4 KB in all; definitions
 * are longer). Checked when the function loads: a bad definition stops it with one line.
 */
import { readFileSync } from 'node:fs';
import { AgentCatalog } from '../core/definitions/catalog.js';
import { messageOf } from '../core/errors/errors.js';
import { type Env, externalToolNamesOf } from './wire.js';

/** The JSON text of a variable: inline, or read from the file `@<path>` names. */
function jsonText(name: string, value: string | undefined): unknown {
  if (value === undefined || value.trim() === '') return undefined;
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = readFileSync(value.slice(1), 'utf8');
    } catch (error) {
      throw new Error(`Stepwise is misconfigured: ${name}: cannot read ${value.slice(1)}: ${messageOf(error)}`);
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`Stepwise is misconfigured: ${name}: is not valid JSON`);
  }
}

/**
 * The definitions `STEPWISE_AGENTS` and `STEPWISE_WORKFLOWS` hold, as JSON, unchecked (undefined
 * where unset): what `npm run dev` hands its stack to check, as `cdk synth` checks the construct's.
 */
export function configuredDefinitions(source: Record<string, string | undefined>): { agents: unknown; workflows: unknown } {
  return { agents: jsonText('STEPWISE_AGENTS', source.STEPWISE_AGENTS), workflows: jsonText('STEPWISE_WORKFLOWS', source.STEPWISE_WORKFLOWS) };
}

/** The definitions the CDK construct bundled (esbuild `define`); undefined in `npm run dev` and tests. */
const bundled = {
  agents: process.env.STEPWISE_BUNDLED_AGENTS,
  workflows: process.env.STEPWISE_BUNDLED_WORKFLOWS,
};

/** The deployment's catalog, checked against its tools and models. */
export function agentCatalogOf(
  env: Pick<Env, 'STEPWISE_MCP_SERVER_NAMES' | 'STEPWISE_LAMBDA_TOOL_NAMES' | 'STEPWISE_ALLOWED_MODELS' | 'STEPWISE_AGENTS' | 'STEPWISE_WORKFLOWS'>,
): AgentCatalog {
  const config = {
    agents: jsonText('STEPWISE_AGENTS', env.STEPWISE_AGENTS ?? bundled.agents),
    workflows: jsonText('STEPWISE_WORKFLOWS', env.STEPWISE_WORKFLOWS ?? bundled.workflows),
  };
  try {
    return AgentCatalog.from(config, {
      external: externalToolNamesOf(env),
      ...(env.STEPWISE_ALLOWED_MODELS ? { allowedModels: env.STEPWISE_ALLOWED_MODELS } : {}),
    });
  } catch (error) {
    throw new Error(`Stepwise is misconfigured: ${messageOf(error)}`);
  }
}
