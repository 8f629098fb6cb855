/**
 * The workspace of one run on S3: every key is `workspaces/<runId>/<checked path>`, at most
 * 1,024 bytes in all (invariant 7, docs/ARCHITECTURE.md).
 */
import {
  CopyObjectCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { FileTooLarge, type ReadOptions, type VersionedFile, type Workspace, type WorkspaceEntry, WorkspaceFailed, WorkspaceRefused, WorkspaceUnavailable, type WriteOptions, WriteConflict } from '../../core/workspace/types.js';
import { checkPath, pathBudget } from '../../core/workspace/paths.js';
import { guard as guardTransient } from '../aws/errors.js';
import { forEachLimited } from '../aws/parallel.js';

/** The object metadata naming the tool call that wrote an object (`x-amz-meta-tool-use-id`). */
export const writtenByMetadata = 'tool-use-id';

/** Client errors that mean the deployment is wrong (credentials, policy, bucket), not the request. */
const deploymentFaults = new Set([
  'AccessDenied',
  'AllAccessDisabled',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'InvalidToken',
  'TokenRefreshRequired',
  'NoSuchBucket',
  'AccountProblem',
]);

interface ServiceError extends Error {
  $metadata: { httpStatusCode?: number };
}

function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && '$metadata' in error;
}

export function isMissing(error: unknown): boolean {
  return error instanceof Error && (error.name === 'NoSuchKey' || error.name === 'NotFound');
}

/**
 * Runs an S3 call and names what went wrong: transient faults become `WorkspaceUnavailable`
 * (retried); a refused precondition `WriteConflict`; a deployment fault (credentials, policy,
 * bucket) `WorkspaceFailed` (the run fails); any other client error `WorkspaceRefused`, which a
 * tool answers with an error result the model can act on (invariant 5, docs/ARCHITECTURE.md).
 * `NoSuchKey` passes through for `read` to answer.
 */
export async function guard<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await guardTransient(what, call, WorkspaceUnavailable);
  } catch (error) {
    if (error instanceof WorkspaceUnavailable || !isServiceError(error) || isMissing(error)) throw error;
    const status = error.$metadata.httpStatusCode ?? 0;
    // 412: the If-Match ETag no longer matches; 409: a concurrent conditional write won.
    if (status === 412 || status === 409 || error.name === 'PreconditionFailed' || error.name === 'ConditionalRequestConflict') {
      throw new WriteConflict(`${what}: the file changed since it was read.`, { cause: error });
    }
    if (deploymentFaults.has(error.name) || status === 401 || status === 403 || status < 400 || status >= 500) {
      throw new WorkspaceFailed(`${what} failed: ${error.name}: ${error.message}`, { cause: error });
    }
    throw new WorkspaceRefused(`${what} was refused by the store: ${error.name}: ${error.message}`, { cause: error });
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
  /** The bytes of path the key has room for after the prefix. */
  private readonly room: number;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    runId: string,
  ) {
    this.prefix = workspacePrefix(runId);
    this.room = pathBudget(this.prefix);
  }

  private key(path: string): string {
    return this.prefix + checkPath(path, { maxBytes: this.room });
  }

  async read(path: string, options: ReadOptions = {}): Promise<Uint8Array | undefined> {
    return (await this.readVersioned(path, options))?.bytes;
  }

  async readVersioned(path: string, options: ReadOptions = {}): Promise<VersionedFile | undefined> {
    const key = this.key(path);
    let out: GetObjectCommandOutput;
    try {
      out = await guard(`Reading ${path}`, () => this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key })));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    const size = out.ContentLength ?? 0;
    if (options.maxBytes !== undefined && size > options.maxBytes) {
      // Refused before the body is fetched: the stream is dropped unread.
      await out.Body?.transformToWebStream().cancel();
      throw new FileTooLarge(key.slice(this.prefix.length), size, options.maxBytes);
    }
    const bytes = out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
    const writtenBy = out.Metadata?.[writtenByMetadata];
    return { bytes, version: out.ETag ?? '', ...(writtenBy ? { writtenBy } : {}) };
  }

  async write(path: string, content: Uint8Array, options: WriteOptions = {}): Promise<void> {
    const key = this.key(path);
    try {
      await guard(`Writing ${path}`, () =>
        this.s3.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: content,
            ContentLength: content.byteLength,
            ...(options.ifVersion !== undefined ? { IfMatch: options.ifVersion } : {}),
            ...(options.writtenBy ? { Metadata: { [writtenByMetadata]: options.writtenBy } } : {}),
          }),
        ),
      );
    } catch (error) {
      // A conditional write over an object deleted since it was read: S3 answers 404.
      if (isMissing(error) && options.ifVersion !== undefined) {
        throw new WriteConflict(`Writing ${path}: the file was removed since it was read.`, { cause: error });
      }
      throw error;
    }
  }

  async list(folder: string, limit: number): Promise<{ entries: WorkspaceEntry[]; truncated: boolean }> {
    const relative = checkPath(folder, { allowRoot: true, maxBytes: this.room });
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

/**
 * Copies files from one run's workspace to another's inside the bucket (S3 CopyObject, 16 at a
 * time; no bytes pass through the function): a fork's files (`ForkCopies.workspace`). Files the
 * target holds already are left alone, so a repeated copy only completes one a crash cut short.
 * Metadata is copied with the object, so each file still names the tool call that wrote it.
 */
export function copyWorkspaceFiles(s3: S3Client, bucket: string): (from: string, to: string, paths: readonly string[]) => Promise<number> {
  return async (from, to, paths) => {
    if (paths.length === 0) return 0;
    const source = workspacePrefix(from);
    const target = workspacePrefix(to);
    const held = await new S3Workspace(s3, bucket, to).list('', paths.length);
    const present = new Set(held.entries.map((e) => e.path));
    const missing = paths.filter((path) => !present.has(path));
    await forEachLimited(missing, 16, async (path) => {
      await guard(`Copying ${path} to the fork's workspace`, () =>
        s3.send(new CopyObjectCommand({ Bucket: bucket, Key: target + path, CopySource: copySource(bucket, source + path) })),
      );
    });
    return missing.length;
  };
}

/** CopyObject's source, `bucket/key` URL-encoded but for the key's slashes, as S3 requires. */
function copySource(bucket: string, key: string): string {
  return `${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
}
