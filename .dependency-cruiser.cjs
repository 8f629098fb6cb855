// The import graph's rules (docs/ARCHITECTURE.md, "Import rules"), checked by test/unit/structure.test.ts.
// Type-only imports count: a circle of types is still a circle to read.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module reaches itself through its imports: logic imports types, and never each other in a circle.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'types-at-the-bottom',
      comment: "A feature's types file (its records, ports and errors) imports other types files only, never logic.",
      severity: 'error',
      from: { path: '^functions/core/.+/(types|hooks)\\.ts$' },
      to: {
        path: '^functions/core/',
        pathNot: ['^functions/core/.+/(types|hooks)\\.ts$', '^functions/core/model/messages\\.ts$', '^functions/core/errors/'],
      },
    },
    {
      name: 'no-dev-runtime-in-functions',
      comment: 'local/ is the dev-only runtime and its stand-ins: no Lambda bundle may carry it.',
      severity: 'error',
      from: { path: '^functions/' },
      to: { path: '^local/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|cdk\\.out|\\.stepwise|reports)/' },
  },
};
