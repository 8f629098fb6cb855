/**
 * The workspace port and its path rules (invariant 7, docs/ARCHITECTURE.md), enforced here and only here.
 */
import { InfrastructureError, StepwiseError } from './errors.js';

/** A file in the workspace. */
export interface WorkspaceEntry {
  path: string;
  size: number;
}

/** The files of one run. Paths are workspace-relative and must pass `checkPath`. */
export interface Workspace {
  /** The file's bytes, or `undefined` when there is no such file. */
  read(path: string): Promise<Uint8Array | undefined>;
  write(path: string, content: Uint8Array): Promise<void>;
  /** Files under a folder ("" for all), in key order, at most `limit`; `truncated` when more exist. */
  list(folder: string, limit: number): Promise<{ entries: WorkspaceEntry[]; truncated: boolean }>;
}

/** A path the workspace refuses; a tool turns it into an error result the model can act on. */
export class PathRejected extends StepwiseError {
  override readonly name = 'PathRejected';
}

/** The workspace's store failed (throttled, unreachable): retried by the state machine. */
export class WorkspaceUnavailable extends InfrastructureError {
  override readonly name = 'WorkspaceUnavailable';
  override readonly transient = true;
}

/** The workspace's store refused a call for good (access denied, no such bucket): a deployment fault. */
export class WorkspaceFailed extends InfrastructureError {
  override readonly name = 'WorkspaceFailed';
}

export const maxPathBytes = 1024;

// C0 and C1 control characters, DEL, and NUL.
// eslint-disable-next-line no-control-regex -- matching control characters is the point.
const controlCharacters = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Normalizes a workspace-relative path or explains why it is refused: absolute paths, `..`
 * segments, backslashes, NUL and control characters, and paths over 1,024 bytes. `.` and empty
 * segments are dropped, so `./a//b` is `a/b`. An empty result is the workspace root, allowed
 * only where `allowRoot` says so (listing).
 */
export function checkPath(path: string, options: { allowRoot?: boolean } = {}): string {
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
  return normal;
}
