/**
 * Throttling of DynamoDB and S3, injected into the real clients with a middleware in front of
 * the emulators: the SDK's few retries absorb short bursts; longer ones surface as the named
 * transient errors the state machine retries, and nothing is lost or duplicated.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { Documents } from '../../functions/adapters/dynamo/documents.js';
import { describe, expect, it } from 'vitest';
import { BlobStore } from '../../functions/adapters/s3/blobs.js';
import { DynamoConversationStore } from '../../functions/adapters/dynamo/conversations.js';
import { S3Workspace } from '../../functions/adapters/s3/workspace.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { textBlock } from '../../functions/core/model/messages.js';
import { useLocalAws } from '../support/local-aws.js';

const aws = useLocalAws();

/** Makes the next `count` requests of a client fail with `name` (HTTP `status`) before they are sent. */
function throttle(client: DynamoDBClient | S3Client, name: string, status: number) {
  const state = { remaining: 0, injected: 0 };
  // Both clients share the middleware stack's shape; their type parameters differ.
  type Next = (args: unknown) => Promise<unknown>;
  const add = client.middlewareStack.add.bind(client.middlewareStack) as unknown as (mw: (next: Next) => Next, options: object) => void;
  add(
    (next) => async (args) => {
      if (state.remaining > 0) {
        state.remaining--;
        state.injected++;
        throw Object.assign(new Error(`${name} (injected)`), { name, $fault: 'client', $metadata: { httpStatusCode: status } });
      }
      return next(args);
    },
    // Inside the retry middleware, so the SDK sees each injected failure as one attempt.
    { step: 'finalizeRequest', priority: 'low', name: 'injectThrottling' },
  );
  return state;
}

function clients() {
  const env = readEnv(aws.env);
  const { dynamo, s3 } = awsClients(env);
  return { env, dynamo, s3 };
}

describe('DynamoDB throttling', () => {
  it('is absorbed by the SDK retries when short, and nothing is lost', async () => {
    const { env, dynamo, s3 } = clients();
    const fault = throttle(dynamo, 'ProvisionedThroughputExceededException', 400);
    const store = new DynamoConversationStore({ doc: new Documents(dynamo), table: env.STEPWISE_TABLE, blobs: new BlobStore(s3, env.STEPWISE_BUCKET) });
    const meta = { runId: 'r', iteration: 0 };
    fault.remaining = 2;
    expect(await store.append('throttle-1', { seq: 0, role: 'user', content: [textBlock('hello')], meta })).toBe(true);
    fault.remaining = 2;
    expect((await store.load('throttle-1')).messages).toEqual([{ seq: 0, role: 'user', content: [textBlock('hello')], meta }]);
    expect(fault.injected).toBe(4);
  });

  it('surfaces as StoreUnavailable when it outlasts them, and a later retry writes exactly once', async () => {
    const { env, dynamo, s3 } = clients();
    const fault = throttle(dynamo, 'ProvisionedThroughputExceededException', 400);
    const store = new DynamoConversationStore({ doc: new Documents(dynamo), table: env.STEPWISE_TABLE, blobs: new BlobStore(s3, env.STEPWISE_BUCKET) });
    const message = { seq: 0, role: 'user' as const, content: [textBlock('persist me')], meta: { runId: 'r', iteration: 0 } };
    fault.remaining = 10;
    await expect(store.append('throttle-2', message)).rejects.toMatchObject({ name: 'StoreUnavailable', transient: true });
    fault.remaining = 0;
    expect(await store.append('throttle-2', message)).toBe(true);
    expect(await store.append('throttle-2', message)).toBe(false);
    expect((await store.load('throttle-2')).messages).toHaveLength(1);
  });
});

describe('S3 SlowDown', () => {
  it('is retried by the SDK, or surfaces as WorkspaceUnavailable; the file is written once and whole', async () => {
    const { env, s3 } = clients();
    const fault = throttle(s3, 'SlowDown', 503);
    const workspace = new S3Workspace(s3, env.STEPWISE_BUCKET, 'slow-1');
    fault.remaining = 2;
    await workspace.write('a.txt', new TextEncoder().encode('first'));
    fault.remaining = 10;
    await expect(workspace.write('a.txt', new TextEncoder().encode('second'))).rejects.toMatchObject({ name: 'WorkspaceUnavailable', transient: true });
    fault.remaining = 0;
    expect(new TextDecoder().decode(await workspace.read('a.txt'))).toBe('first');
    await workspace.write('a.txt', new TextEncoder().encode('second'));
    expect(new TextDecoder().decode(await workspace.read('a.txt'))).toBe('second');
    expect(fault.injected).toBe(2 + 3);
  });
});
