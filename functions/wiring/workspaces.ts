/** Wiring of the tool function's workspaces and memory scopes: credentials narrowed by STS (only it bundles STS). */
import { STSClient } from '@aws-sdk/client-sts';
import { S3Client } from '@aws-sdk/client-s3';
import type { AwsCredentialIdentity } from '@smithy/types';
import { S3MemoryStore } from '../adapters/s3/memory.js';
import { S3Workspace } from '../adapters/s3/workspace.js';
import { ScopedCredentials, partitionOf } from '../adapters/s3/scoped-credentials.js';
import { type Env, cacheMiddleware, plainMemories, plainWorkspaces, sdkAttempts, sdkLogger } from './wire.js';

/** The scoped credentials of the function, once per warm function. */
let credentials: ScopedCredentials | undefined;

function scopedCredentials(env: Env, roleArn: string): ScopedCredentials {
  credentials ??= new ScopedCredentials(
    new STSClient({ region: env.AWS_REGION, maxAttempts: sdkAttempts }),
    roleArn,
    env.STEPWISE_BUCKET,
    () => new Date(),
    partitionOf(env.AWS_REGION),
  );
  return credentials;
}

/** S3 clients by the prefix their credentials are narrowed to (at most 50, the oldest dropped). */
function clientsBy(env: Env, credentialsFor: (key: string) => () => Promise<AwsCredentialIdentity>): (key: string) => S3Client {
  const clients = new Map<string, S3Client>();
  return (key) => {
    let client = clients.get(key);
    if (!client) {
      client = new S3Client({ region: env.AWS_REGION, maxAttempts: sdkAttempts, cacheMiddleware, logger: sdkLogger, credentials: credentialsFor(key) });
      clients.set(key, client);
      if (clients.size > 50) {
        const [oldest] = clients.keys();
        if (oldest) {
          clients.get(oldest)?.destroy();
          clients.delete(oldest);
        }
      }
    }
    return client;
  };
}

/**
 * Workspaces for runs: with a workspace role, each run's S3 client uses credentials narrowed to
 * that run's prefix (invariant 7, docs/ARCHITECTURE.md); locally, the one client.
 */
export function scopedWorkspaces(env: Env, s3: S3Client): (runId: string) => S3Workspace {
  const roleArn = env.STEPWISE_WORKSPACE_ROLE_ARN;
  if (!roleArn) return plainWorkspaces(env, s3);
  const scoped = scopedCredentials(env, roleArn);
  const client = clientsBy(env, (runId) => scoped.forRun(runId));
  return (runId) => new S3Workspace(client(runId), env.STEPWISE_BUCKET, runId);
}

/** Memory scopes the same way: each scope's client uses credentials narrowed to its prefix (docs/memory.md). */
export function scopedMemories(env: Env, s3: S3Client): (prefix: string) => S3MemoryStore {
  const roleArn = env.STEPWISE_WORKSPACE_ROLE_ARN;
  if (!roleArn) return plainMemories(env, s3);
  const scoped = scopedCredentials(env, roleArn);
  const client = clientsBy(env, (prefix) => scoped.forMemory(prefix));
  return (prefix) => new S3MemoryStore(client(prefix), env.STEPWISE_BUCKET, prefix);
}
