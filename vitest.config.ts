import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/** Unit tests that need a fresh module state: they load handler modules wired from the environment. */
const isolatedUnitTests = ['test/unit/telemetry.test.ts', 'test/unit/api.test.ts'];

export default defineConfig({
  test: {
    setupFiles: ['test/support/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Much test time is spent waiting (emulators, timers, a paced model): two files at once on two
    // cores took the suite from about 11.5 to 7.5 minutes. Three gain nothing more (measured: 595 s
    // against 592 s, the cores are busy then). Vitest's default would run one at a time on two cores.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    projects: [
      // Unit tests share their workers' loaded modules (a fresh process per file spent more time
      // importing than testing); the files that wire handler modules from the environment, or
      // otherwise depend on a fresh module state, run isolated with the rest.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], exclude: [...configDefaults.exclude, ...isolatedUnitTests], isolate: false } },
      // The local stacks of one run share their synthesized templates (test/support/template-cache.ts),
      // and the files their workers' loaded modules: each stack loads handler modules of its own
      // (local/stack.ts), and the environment a file changed is restored after it (test/support/setup.ts).
      // A fresh process per file spent 140 s of the suite importing.
      {
        extends: true,
        test: {
          name: 'runtime',
          include: ['test/**/*.test.ts'],
          isolate: false,
          exclude: [...configDefaults.exclude, 'test/infra/**', 'test/unit/**'],
          globalSetup: ['test/support/template-cache.ts'],
        },
      },
      { extends: true, test: { name: 'unit-isolated', include: isolatedUnitTests } },
      // The CDK tests share one synthesized StepwiseStack, built only when one of them runs.
      // A CDK test that synthesizes a stack of its own computes for tens of seconds (more while the
      // type check runs beside the tests): its limit is for a hang, not for a slow core.
      // They share their workers' loaded modules too: they build construct trees and read
      // templates, touching no environment, and loading aws-cdk-lib afresh for each file took more
      // than half their time (measured alone: 164 s against 78 s, and the same in shuffled order).
      { extends: true, test: { name: 'infra', include: ['test/infra/**/*.test.ts'], isolate: false, globalSetup: ['test/support/synth-stepwise.ts'], testTimeout: 120_000 } },
    ],
  },
});
