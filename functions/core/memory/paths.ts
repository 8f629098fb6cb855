/**
 * Path rules of the memory tool: the workspace's (invariant 7, `workspace/paths.ts`), and every
 * path names `/memories` or something under it.
 */
import { checkPath, maxKeyBytes } from '../workspace/paths.js';
import { PathRejected } from '../workspace/types.js';

/** The folder the model sees its memory as. */
export const memoryRoot = '/memories';

/** The longest key prefix of a scope (`memories/session/<22 characters>/`), so every path fits any scope. */
export const memoryPrefixBytes = 'memories/session/'.length + 22 + 1;

/** How many bytes of path fit after a scope's prefix. */
export const maxMemoryPathBytes = maxKeyBytes - memoryPrefixBytes;

/**
 * The path relative to `/memories` (`notes/a.md`; `""` for `/memories` itself, allowed only where
 * `allowRoot` says so), or `PathRejected` naming what is wrong: a path outside `/memories`, `..`
 * segments, backslashes, control characters, an over-long path.
 */
export function checkMemoryPath(path: string, options: { allowRoot?: boolean } = {}): string {
  if (typeof path !== 'string') throw new PathRejected('The path must be a string.');
  if (path !== memoryRoot && !path.startsWith(`${memoryRoot}/`)) {
    throw new PathRejected(`The path ${JSON.stringify(path)} is outside ${memoryRoot}: memory paths start with ${memoryRoot}/, such as ${memoryRoot}/notes.md.`);
  }
  const rest = path.slice(memoryRoot.length).replace(/^\/+/, '');
  if (rest.split('/').includes('..')) throw new PathRejected(`The path ${JSON.stringify(path)} contains "..": memory paths must stay inside ${memoryRoot}.`);
  const relative = checkPath(rest, { allowRoot: true, maxBytes: maxMemoryPathBytes });
  if (relative === '' && !options.allowRoot) {
    throw new PathRejected(`The path ${JSON.stringify(path)} names ${memoryRoot} itself; name a file under it, such as ${memoryRoot}/notes.md.`);
  }
  return relative;
}

/** The path the model sees for a path relative to `/memories`. */
export function memoryPath(relative: string): string {
  return relative === '' ? memoryRoot : `${memoryRoot}/${relative}`;
}
