/**
 * The workspace port: a run's private folder of files (S3 deployed), and the errors its
 * operations name.
 */
import { named } from '../errors/errors.js';

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
export class PathRejected extends named('PathRejected') {}

/** A conditional write found the file changed (or gone) since it was read: read it again and retry. */
export class WriteConflict extends named('WriteConflict') {}

/** A file larger than the reader takes; `size` and `limit` in bytes. */
export class FileTooLarge extends named('FileTooLarge') {
  constructor(
    readonly path: string,
    readonly size: number,
    readonly limit: number,
    message = `"${path}" is ${size} bytes, over the ${limit}-byte limit.`,
  ) {
    super(message);
  }
}

/**
 * The store refused the request itself (a key or object too large, a bad argument): the model's
 * call asked for it, so a tool answers it with an error result, and a route with a 4xx.
 */
export class WorkspaceRefused extends named('WorkspaceRefused') {}

/** The workspace's store failed (throttled, unreachable): retried by the state machine. */
export class WorkspaceUnavailable extends named('WorkspaceUnavailable') {}

/** The workspace's store refused a call for good (access denied, no such bucket): a deployment fault. */
export class WorkspaceFailed extends named('WorkspaceFailed') {}
