import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';

interface NagReport {
  pluginReports: { violations: { ruleName: string; violatingConstructs: { constructPath: string }[] }[] }[];
}

/** Synthesizes an app with cdk-nag's AwsSolutionsChecks and lists what it reports. */
export function nagViolations(app: App): string[] {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  try {
    app.synth();
  } catch (error) {
    // Synthesis fails on unacknowledged findings; the report below lists them.
    if (!(error instanceof Error) || error.name !== 'ValidationFailed') throw error;
  }
  const report = JSON.parse(readFileSync(join(app.outdir, 'validation-report.json'), 'utf8')) as NagReport;
  return report.pluginReports.flatMap((r) =>
    r.violations.map((v) => `${v.ruleName} ${v.violatingConstructs.map((x) => x.constructPath).join(',')}`),
  );
}
