/** Wiring of the tool function's workspaces: per-run credentials from STS (only it bundles STS). */
import { STSClient } from '@aws-sdk/client-sts';
import { S3Client } from '@aws-sdk/client-s3';
import { S3Workspace } from '../adapters/s3/workspace.js';
import { ScopedCredentials, partitionOf } from '../adapters/s3/scoped-credentials.js';
import { type Env, cacheMiddleware, plainWorkspaces, sdkAttempts, sdkLogger } from './wire.js';

/**
 * Workspaces for runs: with a workspace role, each run's S3 client uses credentials narrowed to
 * that run's prefix (invariant 7, docs/ARCHITECTURE.md); locally, the one client.
 */
export function scopedWorkspaces(env: Env, s3: S3Client): (runId: string) => S3Workspace {
  const roleArn = env.STEPWISE_WORKSPACE_ROLE_ARN;
  if (!roleArn) return plainWorkspaces(env, s3);
  const scoped = new ScopedCredentials(
    new STSClient({ region: env.AWS_REGION, maxAttempts: sdkAttempts }),
    roleArn,
    env.STEPWISE_BUCKET,
    () => new Date(),
    partitionOf(env.AWS_REGION),
  );
  const clients = new Map<string, S3Client>();
  return (runId) => {
    let client = clients.get(runId);
    if (!client) {
      client = new S3Client({ region: env.AWS_REGION, maxAttempts: sdkAttempts, cacheMiddleware, logger: sdkLogger, credentials: scoped.forRun(runId) });
      clients.set(runId, client);
      if (clients.size > 50) {
        const [oldest] = clients.keys();
        if (oldest) {
          clients.get(oldest)?.destroy();
          clients.delete(oldest);
        }
      }
    }
    return new S3Workspace(client, env.STEPWISE_BUCKET, runId);
  };
}
