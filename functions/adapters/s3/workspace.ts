/**
 * The workspace of one run on S3: every key is `workspaces/<runId>/<checked path>`.
 */
import {
  GetObjectCommand,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { type Workspace, type WorkspaceEntry, WorkspaceFailed, WorkspaceUnavailable, checkPath } from '../../core/workspace.js';
import { guard as guardTransient } from '../aws/errors.js';

/**
 * Runs an S3 call: transient faults become `WorkspaceUnavailable` (retried), other service
 * errors `WorkspaceFailed` (the run fails), so the model never sees a deployment fault as a
 * tool error (invariant 5, docs/ARCHITECTURE.md). `NoSuchKey` passes through for `read` to answer.
 */
async function guard<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await guardTransient(what, call, WorkspaceUnavailable);
  } catch (error) {
    if (error instanceof WorkspaceUnavailable) throw error;
    const service = typeof error === 'object' && error !== null && '$metadata' in error;
    if (service && error instanceof Error && error.name !== 'NoSuchKey' && error.name !== 'NotFound') {
      throw new WorkspaceFailed(`${what} failed: ${error.name}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/** The key prefix of a run's workspace; the IAM policy of the tool function covers `workspaces/*`. */
export function workspacePrefix(runId: string): string {
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(runId) || runId === '.' || runId === '..') {
    throw new Error(`Run id "${runId}" cannot name a workspace.`);
  }
  return `workspaces/${runId}/`;
}

export class S3Workspace implements Workspace {
  private readonly prefix: string;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    runId: string,
  ) {
    this.prefix = workspacePrefix(runId);
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    const key = this.prefix + checkPath(path);
    try {
      const out = await guard(
        `Reading ${path}`,
        () => this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key })));
      return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
    } catch (error) {
      if (error instanceof Error && (error.name === 'NoSuchKey' || error.name === 'NotFound')) return undefined;
      throw error;
    }
  }

  async write(path: string, content: Uint8Array): Promise<void> {
    const key = this.prefix + checkPath(path);
    await guard(
      `Writing ${path}`,
      () =>
        this.s3.send(
          new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: content, ContentLength: content.byteLength }),
        ),
    );
  }

  async list(folder: string, limit: number): Promise<{ entries: WorkspaceEntry[]; truncated: boolean }> {
    const relative = checkPath(folder, { allowRoot: true });
    const prefix = relative ? `${this.prefix}${relative}/` : this.prefix;
    const entries: WorkspaceEntry[] = [];
    let token: string | undefined;
    do {
      const page: ListObjectsV2CommandOutput = await guard(
        `Listing ${folder || 'the workspace'}`,
        () =>
          this.s3.send(
            new ListObjectsV2Command({
              Bucket: this.bucket,
              Prefix: prefix,
              ContinuationToken: token,
              MaxKeys: Math.min(1000, limit + 1 - entries.length),
            }),
          ));
      for (const object of page.Contents ?? []) {
        if (!object.Key) continue;
        entries.push({ path: object.Key.slice(this.prefix.length), size: object.Size ?? 0 });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token && entries.length <= limit);
    const truncated = entries.length > limit || token !== undefined;
    return { entries: entries.slice(0, limit), truncated };
  }
}
