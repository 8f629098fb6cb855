/**
 * Vitest global setup of the CDK tests: the default StepwiseStack is synthesized once per run,
 * with its Lambda bundles and cdk-nag, and every test file reads it (test/support/template.ts).
 */
import type { TestProject } from 'vitest/node';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from './synth.js';

export default function setup(project: TestProject): void {
  const { template, violations } = synthesize((app) => new StepwiseStack(app, 'Stepwise'), { bundling: true, nag: true });
  project.provide('stepwiseStack', { template: template.toJSON(), violations });
}
