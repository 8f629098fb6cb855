/**
 * The workspace port and its path rules (invariant 7, docs/ARCHITECTURE.md), enforced here and only here.
 */
import { InfrastructureError, StepwiseError } from './errors.js';

/** A file in the workspace. */
export interface WorkspaceEntry {
  path: string;
  size: number;
}

/** A file as read for a change: its bytes, its version, and the tool call that wrote it last. */
export interface VersionedFile {
  bytes: Uint8Array;
  /** Changes on every write (the S3 ETag); a conditional write names the version it read. */
  version: string;
  /** The `toolUseId` of the call that wrote this version, when a tool call wrote it. */
  writtenBy?: string;
}

/** How much a caller will take: a larger file is refused with `FileTooLarge` before its bytes are fetched. */
export interface ReadOptions {
  maxBytes?: number;
}

/** How a write is made: only over the version read (`ifVersion`), recording the writing call (`writtenBy`). */
export interface WriteOptions {
  ifVersion?: string;
  writtenBy?: string;
}

/** The files of one run. Paths are workspace-relative and must pass `checkPath`. */
export interface Workspace {
  /** The file's bytes, or `undefined` when there is no such file; `FileTooLarge` over `maxBytes`, before reading it. */
  read(path: string, options?: ReadOptions): Promise<Uint8Array | undefined>;
  /** The file with its version, for a read-modify-write; `undefined` when there is no such file. */
  readVersioned(path: string, options?: ReadOptions): Promise<VersionedFile | undefined>;
  /** Writes the file; with `ifVersion`, only if it is still that version, else `WriteConflict`. */
  write(path: string, content: Uint8Array, options?: WriteOptions): Promise<void>;
  /** Files under a folder ("" for all), in key order, at most `limit`; `truncated` when more exist. */
  list(folder: string, limit: number): Promise<{ entries: WorkspaceEntry[]; truncated: boolean }>;
}

/** A path the workspace refuses; a tool turns it into an error result the model can act on. */
export class PathRejected extends StepwiseError {
  override readonly name = 'PathRejected';
}

/** A conditional write found the file changed (or gone) since it was read: read it again and retry. */
export class WriteConflict extends StepwiseError {
  override readonly name = 'WriteConflict';
}

/** A file larger than the reader takes; `size` and `limit` in bytes. */
export class FileTooLarge extends StepwiseError {
  override readonly name = 'FileTooLarge';
  constructor(
    readonly path: string,
    readonly size: number,
    readonly limit: number,
  ) {
    super(`"${path}" is ${size} bytes, over the ${limit}-byte limit.`);
  }
}

/**
 * The store refused the request itself (a key or object too large, a bad argument): the model's
 * call asked for it, so a tool answers it with an error result, and a route with a 4xx.
 */
export class WorkspaceRefused extends StepwiseError {
  override readonly name = 'WorkspaceRefused';
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
