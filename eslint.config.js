// Lint rules that keep the mechanical parts honest (habit 14, docs/code-habits.md).
import js from '@eslint/js';
import vitest from '@vitest/eslint-plugin';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// `import { z }` pulls zod's whole namespace, all ~40 locales with it (~260 KiB of every bundle);
// `import * as z` lets esbuild keep only what is used.
const zodNamespace = {
  selector: "ImportDeclaration[source.value='zod'] > ImportSpecifier[imported.name='z']",
  message: "import * as z from 'zod' keeps zod's locales out of the bundles",
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'cdk.out/**', '.stepwise/**', 'coverage/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { languageOptions: { globals: globals.node } },
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/ban-ts-comment': ['error', { 'ts-ignore': true, 'ts-nocheck': true, 'ts-expect-error': 'allow-with-description' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // One declaration per module: a file's imports read as its dependencies, once each.
      'no-duplicate-imports': 'error',
      'no-restricted-syntax': ['error', zodNamespace],
    },
  },
  {
    files: ['functions/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['aws-cdk-lib', 'aws-cdk-lib/*', 'constructs'], message: 'core holds no infrastructure' },
            { group: ['@aws-sdk/*', '@anthropic-ai/*', '@aws-lambda-powertools/*'], message: 'core depends on ports, not SDKs' },
            { group: ['**/adapters/**', '**/handlers/**', '**/local/**'], message: 'core may not import adapters' },
          ],
        },
      ],
    },
  },
  {
    // The console runs in browsers (docs/console.md, "How it is built").
    files: ['console/src/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
  },
  {
    files: ['test/**/*.ts'],
    plugins: { vitest },
    rules: {
      'vitest/no-disabled-tests': 'error',
      'vitest/no-focused-tests': 'error',
      'vitest/expect-expect': ['error', { assertFunctionNames: ['expect', 'expect*', 'template.has*'] }],
    },
  },
);
