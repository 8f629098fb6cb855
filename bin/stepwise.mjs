#!/usr/bin/env node
// The `stepwise` command of the package. It runs the bundle that `npm run build:cli` writes
// (`npm ci` and `npm install` write it too, through `prepare`), which starts in a fraction of the
// time tsx takes, as long as no source it was built from has changed since. Otherwise (no bundle,
// or sources edited or pulled after it) it runs the TypeScript through tsx, so a change shows at once.
import { readFileSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const bundle = new URL('dist/stepwise.mjs', root);

/** Whether the bundle is newer than every input its esbuild metafile lists. */
function bundleIsCurrent() {
  try {
    const built = statSync(bundle).mtimeMs;
    const { inputs } = JSON.parse(readFileSync(new URL('dist/stepwise.meta.json', root), 'utf8'));
    return Object.keys(inputs).every((input) => statSync(new URL(input, root)).mtimeMs <= built);
  } catch {
    return false;
  }
}

if (bundleIsCurrent()) {
  await import(bundle.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./stepwise.js');
}
