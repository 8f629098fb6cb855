/**
 * Builds the console (docs/console.md, "How it is built"): one esbuild pass over
 * `console/src/main.tsx` (Preact with esbuild's automatic JSX), code-split ES modules and one
 * stylesheet under `assets/` with content hashes in their names, and an `index.html` that loads
 * them. Synchronous (`buildSync`), so CDK's local asset bundling can call it at synth time.
 *
 * `npm run build:console` writes `dist/console/` (and `dist/console.meta.json`, the inputs it was
 * built from); the local server serves that folder when it is current, and builds in memory when
 * it is not, so a changed source shows without a manual step.
 */
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';

/** The repository root (esbuild's working directory: the metafile's input paths are relative to it). */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Where `npm run build:console` writes the console, and the record of its inputs. */
export const consoleDist = join(root, 'dist', 'console');
const metaFile = (dir: string) => `${dir}.meta.json`;

/** The path the console is served under, on the local server and behind CloudFront. */
export const consoleBase = '/console/';

/** One file of the built console, by its path under the console's root (`index.html`, `assets/…`). */
export interface ConsoleFile {
  path: string;
  contentType: string;
  /** `immutable`: the name carries the content hash; `no-cache`: always revalidated (index.html, config.json). */
  cache: 'immutable' | 'no-cache';
  bytes: Uint8Array;
}

export interface ConsoleBuild {
  files: ConsoleFile[];
  /** The source files the build read, relative to the repository root. */
  inputs: string[];
}

/** The Cache-Control header of a console file. */
export function cacheControlOf(file: Pick<ConsoleFile, 'cache'>): string {
  return file.cache === 'immutable' ? 'public, max-age=31536000, immutable' : 'no-cache';
}

/** Builds the console in memory. */
export function buildConsole(): ConsoleBuild {
  const assets = join(root, '.console-build', 'assets');
  const result = buildSync({
    absWorkingDir: root,
    entryPoints: { main: 'console/src/main.tsx' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022', 'chrome111', 'firefox111', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    metafile: true,
    write: false,
    outdir: assets,
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    assetNames: '[name]-[hash]',
    legalComments: 'none',
    logLevel: 'warning',
    // micromark's browser build decodes character references by assigning to innerHTML, which the
    // console's Trusted Types policy forbids; the portable build looks them up in a table instead.
    alias: { 'decode-named-character-reference': createRequire(import.meta.url).resolve('decode-named-character-reference') },
  });
  const files: ConsoleFile[] = result.outputFiles.map((file) => ({
    path: `assets/${relative(assets, file.path).split('\\').join('/')}`,
    contentType: contentTypeOf(file.path),
    cache: 'immutable',
    bytes: file.contents,
  }));
  const outputs = Object.entries(result.metafile.outputs);
  const entry = outputs.find(([, output]) => output.entryPoint === 'console/src/main.tsx');
  if (!entry) throw new Error('The console build produced no entry module.');
  const urlOf = (output: string) => `${consoleBase}assets/${relative(assets, resolve(root, output)).split('\\').join('/')}`;
  const [entryPath, entryOutput] = entry;
  // Chunks the entry imports statically are fetched at once, not one after another.
  const preloads = entryOutput.imports.filter((i) => i.kind === 'import-statement' && !i.external).map((i) => urlOf(i.path));
  const html = indexHtml({ script: urlOf(entryPath), ...(entryOutput.cssBundle ? { stylesheet: urlOf(entryOutput.cssBundle) } : {}), preloads });
  files.push({ path: 'index.html', contentType: contentTypeOf('index.html'), cache: 'no-cache', bytes: new TextEncoder().encode(html) });
  const inputs = [...Object.keys(result.metafile.inputs), relative(root, fileURLToPath(import.meta.url))];
  return { files, inputs };
}

/** The page every console path answers with; the script decides what to show from the path. */
function indexHtml({ script, stylesheet, preloads }: { script: string; stylesheet?: string; preloads: string[] }): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light">',
    '<title>Stepwise console</title>',
    '<link rel="icon" href="data:,">',
    ...(stylesheet ? [`<link rel="stylesheet" href="${stylesheet}">`] : []),
    ...preloads.map((href) => `<link rel="modulepreload" href="${href}">`),
    `<script type="module" src="${script}"></script>`,
    '</head>',
    '<body>',
    '<div id="app"></div>',
    '<noscript>The Stepwise console needs JavaScript.</noscript>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/**
 * Writes a build to `dir` with the record of its inputs beside it (unless `record` is false: CDK's asset folder). Each file is written whole and
 * renamed into place, assets before the index that names them, and files of earlier builds are
 * removed last, so a server reading the folder (or a second build writing it) never sees a page
 * whose assets are missing.
 */
export function writeConsole(build: ConsoleBuild, dir: string = consoleDist, options: { record?: boolean } = {}): void {
  const put = (path: string, bytes: Uint8Array | string) => {
    mkdirSync(dirname(path), { recursive: true });
    const temporary = `${path}.${process.pid}.tmp`;
    writeFileSync(temporary, bytes);
    renameSync(temporary, path);
  };
  const ordered = [...build.files].sort((a, b) => Number(a.path === 'index.html') - Number(b.path === 'index.html'));
  for (const file of ordered) put(join(dir, file.path), file.bytes);
  if (options.record !== false) put(metaFile(dir), JSON.stringify({ inputs: build.inputs }));
  const kept = new Set(build.files.map((file) => file.path));
  for (const old of listFiles(dir)) if (!kept.has(old) && !old.endsWith('.tmp')) rmSync(join(dir, old), { force: true });
}

/** The paths of the files under `dir`, relative to it. */
function listFiles(dir: string): string[] {
  const walk = (folder: string): string[] =>
    readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? walk(join(folder, entry.name)) : [join(folder, entry.name)],
    );
  return walk(dir).map((path) => relative(dir, path).split('\\').join('/'));
}

/** Whether `dir` holds a build newer than every source it was built from. */
export function consoleIsCurrent(dir: string = consoleDist): boolean {
  try {
    const built = statSync(join(dir, 'index.html')).mtimeMs;
    const { inputs } = JSON.parse(readFileSync(metaFile(dir), 'utf8')) as { inputs: string[] };
    return inputs.every((input) => statSync(join(root, input)).mtimeMs <= built);
  } catch {
    return false;
  }
}

/** The files of a build written to `dir`. */
export function readConsole(dir: string = consoleDist): ConsoleFile[] {
  return listFiles(dir)
    .filter((name) => !name.endsWith('.tmp'))
    .map((name) => ({ path: name, contentType: contentTypeOf(name), cache: name === 'index.html' ? 'no-cache' : 'immutable', bytes: readFileSync(join(dir, name)) }));
}

/** The console's files: `dir` when it is current, else a fresh build in memory. */
export function currentConsole(dir: string = consoleDist): ConsoleFile[] {
  return consoleIsCurrent(dir) ? readConsole(dir) : buildConsole().files;
}

function contentTypeOf(path: string): string {
  if (path.endsWith('.html')) return 'text/html; charset=utf-8';
  if (path.endsWith('.js')) return 'text/javascript; charset=utf-8';
  if (path.endsWith('.css')) return 'text/css; charset=utf-8';
  if (path.endsWith('.json')) return 'application/json';
  return 'application/octet-stream';
}

// `npm run build:console`
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const build = buildConsole();
  writeConsole(build);
  const { gzipSync } = await import('node:zlib');
  for (const file of build.files) {
    process.stdout.write(`${join('dist/console', file.path)}  ${file.bytes.length} B, ${gzipSync(file.bytes).length} B gzipped\n`);
  }
}
