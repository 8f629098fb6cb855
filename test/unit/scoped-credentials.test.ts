import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { ScopedCredentials, memorySessionPolicy, workspaceSessionPolicy } from '../../functions/adapters/s3/scoped-credentials.js';

// STS cannot be emulated here; aws-sdk-client-mock stands in for it.
describe('ScopedCredentials', () => {
  it('narrows the workspace role to one run’s prefix with a session policy', async () => {
    const sts = mockClient(STSClient);
    const expiration = new Date(Date.now() + 15 * 60_000);
    sts.on(AssumeRoleCommand).resolves({ Credentials: { AccessKeyId: 'AKIA', SecretAccessKey: 'secret', SessionToken: 'token', Expiration: expiration } });
    const scoped = new ScopedCredentials(new STSClient({}), 'arn:aws:iam::123456789012:role/ws', 'bucket-1');

    const credentials = await scoped.forRun('run-42')();
    expect(credentials).toEqual({ accessKeyId: 'AKIA', secretAccessKey: 'secret', sessionToken: 'token', expiration });
    const input = sts.commandCalls(AssumeRoleCommand)[0]?.args[0].input;
    expect(input).toMatchObject({ RoleArn: 'arn:aws:iam::123456789012:role/ws', RoleSessionName: 'stepwise-run-42', DurationSeconds: 900 });
    expect(JSON.parse(String(input?.Policy))).toEqual({
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject'], Resource: 'arn:aws:s3:::bucket-1/workspaces/run-42/*' },
        { Effect: 'Allow', Action: 's3:ListBucket', Resource: 'arn:aws:s3:::bucket-1', Condition: { StringLike: { 's3:prefix': 'workspaces/run-42/*' } } },
      ],
    });
    // Reused while valid: one AssumeRole per run.
    await scoped.forRun('run-42')();
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(1);
    await scoped.forRun('run-43')();
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(2);
    sts.restore();
  });

  it('assumes again when the credentials are about to expire', async () => {
    const sts = mockClient(STSClient);
    sts.on(AssumeRoleCommand).resolves({ Credentials: { AccessKeyId: 'A', SecretAccessKey: 's', SessionToken: 't', Expiration: new Date(Date.now() + 30_000) } });
    const scoped = new ScopedCredentials(new STSClient({}), 'arn:aws:iam::1:role/ws', 'b');
    await scoped.forRun('r')();
    await scoped.forRun('r')();
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(2);
    sts.restore();
  });

  it('narrows the same role to one memory scope’s prefix, a session per scope (docs/memory.md)', async () => {
    const sts = mockClient(STSClient);
    sts.on(AssumeRoleCommand).resolves({ Credentials: { AccessKeyId: 'A', SecretAccessKey: 's', SessionToken: 't', Expiration: new Date(Date.now() + 15 * 60_000) } });
    const scoped = new ScopedCredentials(new STSClient({}), 'arn:aws:iam::1:role/ws', 'bucket-1');
    await scoped.forMemory('memories/owner/AbC_12-x/')();
    const input = sts.commandCalls(AssumeRoleCommand)[0]?.args[0].input;
    expect(input?.RoleSessionName).toBe('stepwise-memory-AbC_12-x');
    expect(JSON.parse(String(input?.Policy))).toEqual({
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], Resource: 'arn:aws:s3:::bucket-1/memories/owner/AbC_12-x/*' },
        { Effect: 'Allow', Action: 's3:ListBucket', Resource: 'arn:aws:s3:::bucket-1', Condition: { StringLike: { 's3:prefix': 'memories/owner/AbC_12-x/*' } } },
      ],
    });
    await scoped.forMemory('memories/owner/AbC_12-x/')();
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(1);
    sts.restore();
  });

  it('refuses a memory prefix that could widen the policy', () => {
    for (const prefix of ['memories/', 'memories/owner/', 'memories/owner/*/', 'memories/owner/a/../b/', 'workspaces/run-1/', 'memories/owner/a']) {
      expect(() => memorySessionPolicy('b', prefix)).toThrow('is not the key prefix of a memory scope');
    }
  });

  it('refuses a run id that could widen the policy', () => {
    expect(() => workspaceSessionPolicy('b', '*')).toThrow();
    expect(() => workspaceSessionPolicy('b', '../x')).toThrow();
  });
});
