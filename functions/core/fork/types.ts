/**
 * Forks' limits, ports and errors.
 */
import { type Conversation } from '../conversation/types.js';
import { type Issue, named } from '../errors/errors.js';
import { type IntakeDeps } from '../intake/types.js';
import type { Workspace } from '../workspace/types.js';

/**
 * The most files a fork copies. The copy is made while the fork request waits (under API
 * Gateway's 30 s), one S3 CopyObject a file, 16 at a time; a larger workspace is refused whole.
 */
export const maxForkFiles = 1_000;

/** The most conversation items (messages and tool results) a fork copies, for the same reason. */
export const maxForkItems = 5_000;

/** A fork request that names something the source does not have; `field` is the body field at fault (400). */
export class InvalidFork extends named('InvalidFork') {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field} ${problem}`);
    // Refused like a body that fails its schema, naming the field.
    this.issues = [{ path: field, message: problem }];
  }

  override readonly issues: Issue[];
}

/** The source is larger than a fork copies while the request waits (409). */
export class ForkTooLarge extends named('ForkTooLarge') {}

/** Copies a fork's starting point: the adapters' side of a fork. */
export interface ForkCopies {
  /**
   * Copies the items of conversation `from` that come before message `beforeSeq` (messages, tool
   * results, summaries made before it) to conversation `to`, unchanged but for their key; items
   * `to` already holds are kept. Returns how many it wrote.
   */
  conversation(from: string, to: string, beforeSeq: number): Promise<number>;
  /** Copies these files of run `from`'s workspace to run `to`'s, except those `to` holds already; returns how many it copied. */
  workspace(from: string, to: string, paths: readonly string[]): Promise<number>;
}

export interface ForkDeps extends IntakeDeps {
  conversations: { load(conversationId: string): Promise<Conversation> };
  workspaceFor(runId: string): Pick<Workspace, 'list' | 'write'>;
  forks: ForkCopies;
}
