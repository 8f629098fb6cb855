/**
 * How each handler is bundled: shared by the function construct (CDK runs esbuild with these),
 * the bench that measures the bundles and the test that reads what they carry.
 */

/** ESM for Node.js 22; `module` before `main`, so packages' ES builds are tree-shaken. */
export const bundleTarget = 'node22';
export const bundleMainFields = ['module', 'main'];
/** Lets CommonJS dependencies `require` inside an ESM bundle. */
export const bundleBanner = "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

/**
 * Modules a handler's bundle leaves out. The Bedrock SDK can fall back to the whole
 * `@aws-sdk/credential-providers` index (Cognito, SSO, … ~55 KiB) through a dynamic import it
 * never takes, since Stepwise hands it the function's credentials; left out, that bundle stays
 * under 1.5 MB. Were it ever taken, the Node.js 22 Lambda runtime ships that module.
 */
export function externalModulesOf(handler: string): string[] {
  return handler === 'inference-bedrock' ? ['@aws-sdk/credential-providers'] : [];
}

/** The esbuild options of a handler's bundle, as the function construct builds it (minified, ESM), with its `define` if any. */
export function esbuildOptionsOf(handler: string, define: Record<string, string> = {}) {
  return {
    entryPoints: [`functions/handlers/${handler}.ts`],
    bundle: true,
    minify: true,
    format: 'esm' as const,
    platform: 'node' as const,
    target: bundleTarget,
    mainFields: bundleMainFields,
    external: externalModulesOf(handler),
    banner: { js: bundleBanner },
    ...(Object.keys(define).length ? { define } : {}),
  };
}
