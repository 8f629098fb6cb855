/** Synthesizes a stack for the CDK tests, cdk-nag first when its findings are wanted. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { nagViolations } from './nag.js';

export interface Synthesized {
  template: Template;
  /** cdk-nag's AwsSolutionsChecks findings; empty unless asked for. */
  violations: string[];
}

/**
 * The template of the stack `build` adds to a fresh app. The Lambda code is bundled only when
 * asked (most tests read the template alone); with `nag`, cdk-nag checks the app before the
 * template is read, since a template read first would leave a synthesized app nag never checks.
 */
export function synthesize(build: (app: App) => Stack, options: { bundling?: boolean; nag?: boolean } = {}): Synthesized {
  const outdir = mkdtempSync(join(tmpdir(), 'stepwise-cdk-'));
  try {
    const app = new App({ outdir, context: options.bundling ? {} : { 'aws:cdk:bundling-stacks': [] } });
    const stack = build(app);
    const violations = options.nag ? nagViolations(app) : [];
    if (!options.nag) app.synth();
    // Read from disk: the assembly is written even when cdk-nag's findings fail the synthesis.
    const template = Template.fromJSON(JSON.parse(readFileSync(join(outdir, stack.templateFile), 'utf8')) as Record<string, unknown>);
    return { template, violations };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
