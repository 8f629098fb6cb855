/**
 * The embedded stand-ins for DynamoDB and S3: dynalite and s3rver on loopback, speaking the real
 * wire protocols to the real AWS SDK clients. Data lives under a folder so it survives a restart.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ResourceInUseException, UpdateTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { listedAttributes, runIndexes } from '../../functions/adapters/dynamo/layout.js';
import dynalite from 'dynalite';
import { localCredentials } from '../../functions/wiring/wire.js';
import { type DataDirLock, lockDataDir } from './data-lock.js';
import { startLoopbackServer } from './http-server.js';

/** Requests by operation (DynamoDB, S3) and DynamoDB bytes each way, as the emulators saw them (the bench). */
export interface RequestCounter {
  reset(): void;
  snapshot(): Promise<RequestCounts>;
}

export interface RequestCounts {
  dynamo: Record<string, number>;
  dynamoBytesIn: number;
  dynamoBytesOut: number;
  s3: Record<string, number>;
}

export interface Emulators {
  dynamoEndpoint: string;
  s3Endpoint: string;
  table: string;
  bucket: string;
  requests: RequestCounter;
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

export const localRegion = 'us-east-1';

/**
 * Starts both emulators. With a data folder, the folder is taken first, and a folder in use
 * throws `DataDirInUse` at once (before the promise), so a caller learns it before starting
 * anything else.
 */
export function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const lock = options.dataDir ? lockDataDir(options.dataDir) : undefined;
  return launch(options, lock).catch((error: unknown) => {
    lock?.release();
    throw error;
  });
}

async function launch(options: EmulatorOptions, lock: DataDirLock | undefined): Promise<Emulators> {
  const table = options.table ?? 'stepwise';
  const bucket = options.bucket ?? 'stepwise-workspaces';

  const dynamo = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ...(options.dataDir ? { path: join(options.dataDir, 'dynamodb') } : {}) });
  // dynalite is an HTTP server whose close also closes its database.
  const dynamoServer = await startLoopbackServer(dynamo, options.dynamoPort ?? 0);
  const dynamoEndpoint = dynamoServer.url;
  const counts = { dynamo: {} as Record<string, number>, dynamoBytesIn: 0, dynamoBytesOut: 0 };
  dynamo.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? 'unknown';
    counts.dynamo[operation] = (counts.dynamo[operation] ?? 0) + 1;
    counts.dynamoBytesIn += Number(req.headers['content-length'] ?? 0);
    res.on('finish', () => {
      counts.dynamoBytesOut += Number(res.getHeader('content-length') ?? 0);
    });
  });

  // Without a data folder the S3 emulator writes to a temporary one, removed on stop.
  const scratch = options.dataDir ? undefined : mkdtempSync(join(tmpdir(), 'stepwise-s3-'));
  const s3 = await startS3Process(scratch ?? join(options.dataDir ?? '', 's3'), options.s3Port ?? 0);
  const s3Endpoint = `http://127.0.0.1:${s3.port}`;

  await createTable(dynamoEndpoint, table);
  await createBucket(s3Endpoint, bucket);

  return {
    dynamoEndpoint,
    s3Endpoint,
    table,
    bucket,
    requests: {
      reset() {
        counts.dynamo = {};
        counts.dynamoBytesIn = 0;
        counts.dynamoBytesOut = 0;
        s3.send('reset');
      },
      snapshot: async () => ({ ...structuredClone(counts), s3: await s3.counts() }),
    },
    async stop() {
      await s3.stop();
      await dynamoServer.close();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
      lock?.release();
    },
  };
}

/** Starts `s3-server.mjs` in a child process and waits for the port it reports. */
async function startS3Process(
  directory: string,
  port: number,
): Promise<{ port: number; send(message: string): void; counts(): Promise<Record<string, number>>; stop(): Promise<void> }> {
  mkdirSync(directory, { recursive: true });
  const script = fileURLToPath(new URL('./s3-server.mjs', import.meta.url));
  const child = spawn(process.execPath, ['--openssl-legacy-provider', script, directory, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  child.channel?.unref();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (!child.stdout) throw new Error('The S3 emulator process has no stdout.');
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`The S3 emulator exited with code ${code} before it listened.`)));
  });
  lines.close();
  const { port: bound } = JSON.parse(first) as { port: number };
  return {
    port: bound,
    send: (message) => child.send(message),
    counts: () =>
      new Promise((resolve) => {
        child.once('message', (reply: { snapshot: Record<string, number> }) => resolve(reply.snapshot));
        child.send('snapshot');
      }),
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}


/** The table layout of `lib/storage.ts` (its key and indexes from one layout module), created in the emulator. */
async function createTable(endpoint: string, table: string): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: localRegion, credentials: localCredentials });
  const indexes = Object.values(runIndexes).map((index) => ({
    IndexName: index.name,
    KeySchema: [
      { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
    ],
    Projection: { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: listedAttributes },
  }));
  const attributes = [
    { AttributeName: 'pk', AttributeType: 'S' as const },
    { AttributeName: 'sk', AttributeType: 'S' as const },
    ...[...new Set(Object.values(runIndexes).flatMap((index) => [index.partitionKey, index.sortKey]))].map((name) => ({
      AttributeName: name,
      AttributeType: 'S' as const,
    })),
  ];
  try {
    await client.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: attributes,
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: indexes,
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    // A data folder from before the run indexes: add the ones it lacks.
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    const present = new Set((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
    for (const index of indexes.filter((i) => !present.has(i.IndexName))) {
      await client.send(
        new UpdateTableCommand({ TableName: table, AttributeDefinitions: attributes, GlobalSecondaryIndexUpdates: [{ Create: index }] }),
      );
    }
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
