/**
 * The synthesized template the local runtime runs, for the inputs that decide it. Synthesis
 * loads aws-cdk-lib and builds the whole stack (seconds); a process that starts many stacks on
 * the same inputs (the test suite starts dozens) can name a folder in STEPWISE_TEMPLATE_CACHE
 * where each template is kept under a hash of its inputs. Without it every start synthesizes.
 * The folder is for one run of unchanged sources: the key holds the inputs, not the code.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LambdaToolConfig, McpServerConfig } from '../functions/core/tools/external/types.js';
import type { StepwiseStackProps } from '../lib/stepwise-stack.js';
import type { Template } from './definitions.js';

export interface TemplateInputs {
  external: { mcpServers: readonly McpServerConfig[]; lambdaTools: readonly LambdaToolConfig[] };
  stackProps?: StepwiseStackProps;
}

export async function localTemplate(inputs: TemplateInputs, cacheDir = process.env.STEPWISE_TEMPLATE_CACHE): Promise<Template> {
  const key = cacheDir ? cacheKey(inputs) : undefined;
  const path = key && cacheDir ? join(cacheDir, `${key}.json`) : undefined;
  if (path) {
    try {
      return JSON.parse(readFileSync(path, 'utf8')) as Template;
    } catch {
      // Not kept yet (or half written by a process that died): synthesize it.
    }
  }
  const { localExternalToolProps, synthesizeTemplate } = await import('./synth.js');
  const template = synthesizeTemplate((app) => ({ ...localExternalToolProps(app, inputs.external), ...inputs.stackProps }));
  if (path && cacheDir) {
    mkdirSync(cacheDir, { recursive: true });
    // Written whole under another name, then renamed: a reader sees the whole template or none.
    const partial = `${path}.${process.pid}.partial`;
    writeFileSync(partial, JSON.stringify(template));
    renameSync(partial, path);
  }
  return template;
}

/**
 * A hash of the inputs, or undefined when they hold anything JSON would not keep whole
 * (a function, a construct, a class instance): such inputs are synthesized every time.
 */
export function cacheKey(inputs: TemplateInputs): string | undefined {
  try {
    const json = JSON.stringify(inputs, (_key, value: unknown) => {
      if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') throw new Error('not plain data');
      if (value && typeof value === 'object' && !Array.isArray(value)) {
        const prototype = Object.getPrototypeOf(value) as unknown;
        if (prototype !== Object.prototype && prototype !== null) throw new Error('not plain data');
      }
      return value;
    });
    return createHash('sha256').update(json).digest('hex');
  } catch {
    return undefined;
  }
}
