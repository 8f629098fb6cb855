/**
 * Long-term memory (DESIGN §15; docs/memory.md): the scopes a run may ask for, the limits of a
 * scope, the store port the memory tool works on, and the errors its operations name.
 */
import * as z from 'zod';
import { named } from '../errors/errors.js';

/** Whose memory a run uses: its owner's, its owner's tenant's, or one session's of its owner. */
export const MemoryScope = z.enum(['owner', 'tenant', 'session']);

export type MemoryScope = z.infer<typeof MemoryScope>;

/** `memory` of a run request or an agent definition. */
export const MemorySettings = z
  .strictObject({ scope: MemoryScope })
  .meta({
    description:
      'Gives the agent Anthropic\'s memory tool over files under /memories that outlive the run: the owner\'s own (`owner`), its tenant\'s (`tenant`), or one session\'s (`session`, with `sessionId`).',
  });

export type MemorySettings = z.infer<typeof MemorySettings>;

/** What a scope holds at most, and how much of it one `view` shows (docs/memory.md, "Limits"). */
export interface MemoryLimits {
  /** Largest memory file, in UTF-8 bytes. */
  maxFileBytes: number;
  /** Most files in one scope. */
  maxFiles: number;
  /** Most bytes of all files of one scope together. */
  maxScopeBytes: number;
  /** Most characters of one `view` answer; longer ones are cut with a marker. */
  maxViewChars: number;
}

/** The limits a deployment has unless it says otherwise. */
export const defaultMemoryLimits: MemoryLimits = {
  maxFileBytes: 100 * 1024,
  maxFiles: 1000,
  maxScopeBytes: 10 * 1024 * 1024,
  maxViewChars: 16_000,
};

/** A memory file: its path under `/memories` (without the root: `notes/a.md`), its size and when it was written last. */
export interface MemoryEntry {
  path: string;
  size: number;
  updatedAt: string;
}

/** A memory file as read for a change: its bytes and its version (the S3 ETag). */
export interface MemoryFile {
  bytes: Uint8Array;
  version: string;
  /** The `toolUseId` of the call that wrote this version, when a tool call wrote it. */
  writtenBy?: string;
}

/** How a write is made: only over the version read (`ifVersion`), or only where no file is (`ifAbsent`). */
export interface MemoryWriteOptions {
  ifVersion?: string;
  ifAbsent?: boolean;
  /** The tool call that writes (kept with the object, so a retried call recognizes its own write). */
  writtenBy?: string;
}

/**
 * The files of one memory scope (one S3 prefix). Paths are relative to `/memories` and already
 * checked (`memory/paths.ts`); a conditional write that finds the file changed throws `WriteConflict`.
 */
export interface MemoryStore {
  /** Every file of the scope in key order, at most `limit`; `truncated` when more exist. */
  list(limit: number): Promise<{ entries: MemoryEntry[]; truncated: boolean }>;
  /** The file with its version, or `undefined` when there is none. */
  read(path: string): Promise<MemoryFile | undefined>;
  write(path: string, bytes: Uint8Array, options?: MemoryWriteOptions): Promise<void>;
  /** Removes the files (a missing one is no error). */
  remove(paths: readonly string[]): Promise<void>;
}

/** A run's memory: its scope and where that scope's files are kept. */
export interface RunMemory {
  scope: MemoryScope;
  store: MemoryStore;
  limits: MemoryLimits;
}

/** A `memory` request the caller cannot have: a tenant scope without a tenant, a session scope without a session (400). */
export class InvalidMemory extends named('InvalidMemory') {
  constructor(problem: string) {
    super(`memory.scope ${problem}`);
    // Refused like a body that fails its schema, naming the field.
    this.issues = [{ path: 'memory.scope', message: problem }];
  }

  override readonly issues: { path: string; message: string }[];
}

/** No memory file at the path the caller named, or none of the caller's (404, the same answer either way). */
export class MemoryNotFound extends named('MemoryNotFound') {}
