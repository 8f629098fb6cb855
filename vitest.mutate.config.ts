import { configDefaults, defineConfig } from 'vitest/config';

// The unit tests alone, for mutation testing: no CDK synthesis, no local emulators.
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    exclude: [...configDefaults.exclude],
    setupFiles: ['test/support/setup.ts'],
    testTimeout: 30_000,
    pool: 'forks',
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
