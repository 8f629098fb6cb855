// `npm run mutate:edges`: the same mutation testing for what surrounds the core (the HTTP API,
// the Lambda handlers, the adapters and their wiring), against the same fast unit tests. The
// adapters' own tests run against the local emulators and are too slow to repeat per mutant, so
// a low score here points at behaviour only the integration tests hold.
import core from './stryker.config.mjs';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  ...core,
  mutate: ['functions/api/**/*.ts', 'functions/handlers/**/*.ts', 'functions/adapters/**/*.ts', 'functions/wiring/**/*.ts'],
  incrementalFile: 'reports/stryker-incremental-edges.json',
  htmlReporter: { fileName: 'reports/mutation/edges.html' },
  // No threshold to hold yet: the score is for finding gaps, not for failing a build.
  thresholds: { high: 80, low: 60, break: null },
};
