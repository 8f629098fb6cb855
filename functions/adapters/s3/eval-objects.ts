/** Deployed evals' JSON documents in the bucket (`evals/<evalId>/…`): the suite, the map's items, each case's result, the report. */
import { GetObjectCommand, NoSuchKey, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { EvalObjects } from '../../core/evals/types.js';
import { guard } from '../aws/errors.js';

export class S3EvalObjects implements EvalObjects {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  async put(key: string, value: unknown): Promise<void> {
    const bytes = Buffer.from(JSON.stringify(value), 'utf8');
    await guard('Storing an eval document', () =>
      this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes, ContentLength: bytes.byteLength, ContentType: 'application/json' })),
    );
  }

  async get(key: string): Promise<unknown> {
    try {
      return await guard('Reading an eval document', async () => {
        const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
        return JSON.parse((await out.Body?.transformToString('utf8')) ?? 'null') as unknown;
      });
    } catch (error) {
      if (error instanceof NoSuchKey || (error instanceof Error && error.name === 'NoSuchKey')) return undefined;
      throw error;
    }
  }
}
