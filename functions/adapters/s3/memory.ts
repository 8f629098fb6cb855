/**
 * One memory scope on S3 (docs/memory.md): every key is `<scope prefix><checked path>`, the prefix
 * made by `core/memory/scope.ts`. Writes are conditional where the tool asks (If-Match on the
 * version read, If-None-Match for a new file), so concurrent edits of one file never lose one.
 */
import { DeleteObjectCommand, GetObjectCommand, type GetObjectCommandOutput, ListObjectsV2Command, type ListObjectsV2CommandOutput, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { MemoryEntry, MemoryFile, MemoryStore, MemoryWriteOptions } from '../../core/memory/types.js';
import { WriteConflict } from '../../core/workspace/types.js';
import { forEachLimited } from '../aws/parallel.js';
import { guard, isMissing, writtenByMetadata } from './workspace.js';

/** The prefixes memory scopes have: `memories/<scope>/<22-character key>/`. */
const scopePrefix = /^memories\/(owner|tenant|session)\/[A-Za-z0-9_-]{22}\/$/;

export class S3MemoryStore implements MemoryStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
  ) {
    if (!scopePrefix.test(prefix)) throw new Error(`"${prefix}" is not the key prefix of a memory scope.`);
  }

  async list(limit: number): Promise<{ entries: MemoryEntry[]; truncated: boolean }> {
    const entries: MemoryEntry[] = [];
    let token: string | undefined;
    do {
      const page: ListObjectsV2CommandOutput = await guard('Listing the memory', () =>
        this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token, MaxKeys: Math.min(1000, limit + 1 - entries.length) })),
      );
      for (const object of page.Contents ?? []) {
        if (!object.Key) continue;
        entries.push({ path: object.Key.slice(this.prefix.length), size: object.Size ?? 0, updatedAt: (object.LastModified ?? new Date(0)).toISOString() });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token && entries.length <= limit);
    return { entries: entries.slice(0, limit), truncated: entries.length > limit || token !== undefined };
  }

  async read(path: string): Promise<MemoryFile | undefined> {
    let out: GetObjectCommandOutput;
    try {
      out = await guard(`Reading /memories/${path}`, () => this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + path })));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    const bytes = out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
    const writtenBy = out.Metadata?.[writtenByMetadata];
    return { bytes, version: out.ETag ?? '', ...(writtenBy ? { writtenBy } : {}) };
  }

  async write(path: string, bytes: Uint8Array, options: MemoryWriteOptions = {}): Promise<void> {
    try {
      await guard(`Writing /memories/${path}`, () =>
        this.s3.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: this.prefix + path,
            Body: bytes,
            ContentLength: bytes.byteLength,
            ContentType: 'text/plain; charset=utf-8',
            ...(options.ifVersion !== undefined ? { IfMatch: options.ifVersion } : {}),
            ...(options.ifAbsent ? { IfNoneMatch: '*' } : {}),
            ...(options.writtenBy ? { Metadata: { [writtenByMetadata]: options.writtenBy } } : {}),
          }),
        ),
      );
    } catch (error) {
      // A conditional write over a file deleted since it was read: S3 answers 404.
      if (isMissing(error) && options.ifVersion !== undefined) throw new WriteConflict(`Writing /memories/${path}: the file was removed since it was read.`, { cause: error });
      throw error;
    }
  }

  async remove(paths: readonly string[]): Promise<void> {
    await forEachLimited(paths, 16, async (path) => {
      await guard(`Deleting /memories/${path}`, () => this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + path })));
    });
  }
}
