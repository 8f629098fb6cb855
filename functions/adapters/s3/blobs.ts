/**
 * Large payloads kept in S3 and referenced from DynamoDB items (invariant 2, docs/ARCHITECTURE.md).
 */
import { createHash } from 'node:crypto';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { guard } from '../aws/errors.js';

/** Reads and writes blobs under one bucket; keys are content-addressed, so a race cannot overwrite. */
export class BlobStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  /** Stores `body` under `prefix` and returns its key. */
  async put(prefix: string, body: string): Promise<string> {
    const digest = createHash('sha256').update(body).digest('hex').slice(0, 32);
    const key = `${prefix}-${digest}.json`;
    const bytes = Buffer.from(body, 'utf8');
    await guard('Storing a large item in S3', () =>
      this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: bytes,
          ContentLength: bytes.byteLength,
          ContentType: 'application/json',
        }),
      ),
    );
    return key;
  }

  async get(key: string): Promise<string> {
    return guard('Reading a large item from S3', async () => {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (!out.Body) throw new Error(`S3 object ${key} has no body.`);
      return out.Body.transformToString('utf8');
    });
  }
}
