/**
 * Credentials narrowed to one run's workspace (invariant 7, docs/ARCHITECTURE.md): the tool function assumes
 * the workspace role with an STS session policy that allows only `workspaces/<runId>/`, so even
 * a path bug in the code cannot reach another run's files.
 */
import { AssumeRoleCommand, type STSClient } from '@aws-sdk/client-sts';
import type { AwsCredentialIdentity } from '@smithy/types';
import { workspacePrefix } from './workspace.js';

/** The session policy for one run: object access and listing under its prefix only. */
export function workspaceSessionPolicy(bucket: string, runId: string, partition = 'aws'): string {
  const prefix = workspacePrefix(runId);
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject'], Resource: `arn:${partition}:s3:::${bucket}/${prefix}*` },
      { Effect: 'Allow', Action: 's3:ListBucket', Resource: `arn:${partition}:s3:::${bucket}`, Condition: { StringLike: { 's3:prefix': `${prefix}*` } } },
    ],
  });
}

/** The session policy for one memory scope (docs/memory.md): its objects read, written and deleted, and listing, under its prefix only. */
export function memorySessionPolicy(bucket: string, prefix: string, partition = 'aws'): string {
  if (!/^memories\/[a-z]+\/[A-Za-z0-9_-]+\/$/.test(prefix)) throw new Error(`"${prefix}" is not the key prefix of a memory scope.`);
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], Resource: `arn:${partition}:s3:::${bucket}/${prefix}*` },
      { Effect: 'Allow', Action: 's3:ListBucket', Resource: `arn:${partition}:s3:::${bucket}`, Condition: { StringLike: { 's3:prefix': `${prefix}*` } } },
    ],
  });
}

/** The partition of a region: `aws`, `aws-cn` or `aws-us-gov`. */
export function partitionOf(region: string): string {
  if (region.startsWith('cn-')) return 'aws-cn';
  if (region.startsWith('us-gov-')) return 'aws-us-gov';
  return 'aws';
}

/** Assumes the workspace role once per run and reuses the credentials until shortly before they expire. */
export class ScopedCredentials {
  private readonly cache = new Map<string, Promise<AwsCredentialIdentity>>();

  constructor(
    private readonly sts: STSClient,
    private readonly roleArn: string,
    private readonly bucket: string,
    private readonly clock: () => Date = () => new Date(),
    private readonly partition = 'aws',
  ) {}

  /** A credentials provider for the run, as the SDK clients take one. */
  forRun(runId: string): () => Promise<AwsCredentialIdentity> {
    return this.provider(runId, () => this.assume(`stepwise-${runId}`, workspaceSessionPolicy(this.bucket, runId, this.partition)));
  }

  /** A credentials provider for one memory scope: its prefix only (docs/memory.md). */
  forMemory(prefix: string): () => Promise<AwsCredentialIdentity> {
    const policy = memorySessionPolicy(this.bucket, prefix, this.partition);
    return this.provider(prefix, () => this.assume(`stepwise-memory-${prefix.split('/').at(-2) ?? ''}`, policy));
  }

  private provider(key: string, assume: () => Promise<AwsCredentialIdentity>): () => Promise<AwsCredentialIdentity> {
    return async () => {
      const cached = this.cache.get(key);
      if (cached) {
        const credentials = await cached;
        if (!credentials.expiration || credentials.expiration.getTime() - this.clock().getTime() > 60_000) return credentials;
      }
      const fresh = assume();
      this.cache.set(key, fresh);
      fresh.catch(() => this.cache.delete(key));
      if (this.cache.size > 200) this.cache.delete(this.cache.keys().next().value as string);
      return fresh;
    };
  }

  private async assume(sessionName: string, policy: string): Promise<AwsCredentialIdentity> {
    const out = await this.sts.send(
      new AssumeRoleCommand({
        RoleArn: this.roleArn,
        RoleSessionName: sessionName.replace(/[^\w+=,.@-]/g, '-').slice(0, 64),
        Policy: policy,
        DurationSeconds: 900,
      }),
    );
    const c = out.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey) throw new Error('AssumeRole returned no credentials.');
    return {
      accessKeyId: c.AccessKeyId,
      secretAccessKey: c.SecretAccessKey,
      ...(c.SessionToken ? { sessionToken: c.SessionToken } : {}),
      ...(c.Expiration ? { expiration: c.Expiration } : {}),
    };
  }
}
