/**
 * Path rules of the workspace (invariant 7, docs/ARCHITECTURE.md): what a tool or a route may name.
 */
import { PathRejected } from './types.js';

/** The longest S3 key, in UTF-8 bytes: the run's prefix and the path together must fit. */
export const maxKeyBytes = 1024;

/** The longest path any workspace takes; one with a prefix takes less (`pathBudget`). */
export const maxPathBytes = maxKeyBytes;

/** How many bytes of path fit after a key prefix. */
export function pathBudget(prefix: string): number {
  return maxKeyBytes - Buffer.byteLength(prefix, 'utf8');
}

// C0 and C1 control characters, DEL, and NUL.
// eslint-disable-next-line no-control-regex -- matching control characters is the point.
const controlCharacters = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Normalizes a workspace-relative path or explains why it is refused: absolute paths, `..`
 * segments, backslashes, NUL and control characters, and paths over 1,024 bytes. `.` and empty
 * segments are dropped, so `./a//b` is `a/b`. An empty result is the workspace root, allowed
 * only where `allowRoot` says so (listing). `maxBytes` is the room a store leaves for the
 * normalized path: S3 limits the whole key, so a workspace passes `pathBudget(prefix)`.
 */
export function checkPath(path: string, options: { allowRoot?: boolean; maxBytes?: number } = {}): string {
  if (typeof path !== 'string') throw new PathRejected('The path must be a string.');
  if (Buffer.byteLength(path, 'utf8') > maxPathBytes) {
    throw new PathRejected(`The path is longer than ${maxPathBytes} bytes; use a shorter path.`);
  }
  if (controlCharacters.test(path)) {
    throw new PathRejected('The path contains a NUL or control character; use printable characters only.');
  }
  if (path.includes('\\')) {
    throw new PathRejected('The path contains a backslash; separate folders with "/".');
  }
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path) || path.startsWith('~')) {
    throw new PathRejected(`"${path}" is absolute; give a path relative to the workspace root, such as "src/index.ts".`);
  }
  const segments = path.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) {
    throw new PathRejected(`"${path}" contains "..": paths must stay inside the workspace.`);
  }
  const normal = segments.join('/');
  if (normal === '' && !options.allowRoot) {
    throw new PathRejected('The path is empty; name a file, such as "notes.md".');
  }
  const room = options.maxBytes ?? maxPathBytes;
  const size = Buffer.byteLength(normal, 'utf8');
  if (size > room) {
    throw new PathRejected(
      `The path is ${size} bytes; this workspace takes paths of at most ${room} bytes (the storage key, with the run's prefix, is limited to ${maxKeyBytes} bytes). Use a shorter path.`,
    );
  }
  return normal;
}
