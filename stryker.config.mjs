// Mutation testing: do the unit tests fail when the core's behaviour changes?
// `npm run mutate` runs it over functions/core; see README "Mutation testing".
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts', related: true },
  mutate: ['functions/core/**/*.ts'],
  ignoreStatic: true,
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  concurrency: 2,
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress', 'html'],
  htmlReporter: { fileName: 'reports/mutation/core.html' },
  clearTextReporter: { allowColor: false, reportTests: false, reportScoreTable: true, reportMutants: true },
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
