/**
 * The embedded stand-ins for DynamoDB and S3: dynalite and s3rver on loopback, speaking the real
 * wire protocols to the real AWS SDK clients. Data lives under a folder so it survives a restart.
 */
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, ResourceInUseException } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import dynalite from 'dynalite';
import S3rver from 's3rver';

export interface Emulators {
  dynamoEndpoint: string;
  s3Endpoint: string;
  table: string;
  bucket: string;
  stop(): Promise<void>;
}

export interface EmulatorOptions {
  /** Folder for the data; in memory when absent. */
  dataDir?: string;
  table?: string;
  bucket?: string;
  dynamoPort?: number;
  s3Port?: number;
}

/** Credentials the emulators accept; nothing real. */
export const localCredentials = { accessKeyId: 'local', secretAccessKey: 'local' };
export const localRegion = 'us-east-1';

export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const table = options.table ?? 'stepwise';
  const bucket = options.bucket ?? 'stepwise-workspaces';
  if (options.dataDir) mkdirSync(join(options.dataDir, 's3'), { recursive: true });

  const dynamo = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ...(options.dataDir ? { path: join(options.dataDir, 'dynamodb') } : {}) });
  await new Promise<void>((resolve, reject) => {
    dynamo.once('error', reject);
    dynamo.listen(options.dynamoPort ?? 0, '127.0.0.1', () => resolve());
  });
  const dynamoEndpoint = `http://127.0.0.1:${(dynamo.address() as AddressInfo).port}`;

  const s3 = new S3rver({
    address: '127.0.0.1',
    port: options.s3Port ?? 0,
    silent: true,
    directory: options.dataDir ? join(options.dataDir, 's3') : join(tmpDir(), 's3'),
  });
  const { port: s3Port } = await s3.run();
  const s3Endpoint = `http://127.0.0.1:${s3Port}`;

  await createTable(dynamoEndpoint, table);
  await createBucket(s3Endpoint, bucket);

  return {
    dynamoEndpoint,
    s3Endpoint,
    table,
    bucket,
    async stop() {
      await s3.close();
      await new Promise<void>((resolve) => dynamo.close(() => resolve()));
    },
  };
}

function tmpDir(): string {
  const dir = join(process.env.TMPDIR ?? '/tmp', `stepwise-s3-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The table layout of `lib/storage.ts`, created in the emulator. */
async function createTable(endpoint: string, table: string): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: localRegion, credentials: localCredentials });
  try {
    await client.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  } finally {
    client.destroy();
  }
}

async function createBucket(endpoint: string, bucket: string): Promise<void> {
  const client = new S3Client({ endpoint, region: localRegion, credentials: localCredentials, forcePathStyle: true });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    const name = error instanceof Error ? error.name : '';
    if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
  } finally {
    client.destroy();
  }
}
