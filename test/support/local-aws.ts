/**
 * Starts the DynamoDB and S3 emulators for one test file and wires the real adapters to them.
 */
import { ListObjectsV2Command, type ListObjectsV2CommandOutput } from '@aws-sdk/client-s3';
import { afterAll, beforeAll } from 'vitest';
import type { ModelProvider } from '../../functions/core/model/types.js';
import { modelWiring } from '../../functions/wiring/model.js';
import { anthropicFrom } from '../../functions/wiring/model-anthropic.js';
import { bedrockFrom } from '../../functions/wiring/model-bedrock.js';
import { scopedWorkspaces } from '../../functions/wiring/workspaces.js';
import { type Wiring, awsClients, readEnv, wire } from '../../functions/wiring/wire.js';
import { type Emulators, startEmulators } from '../../local/stand-ins/emulators.js';

export interface LocalAws {
  emulators: Emulators;
  env: Record<string, string>;
  wiring(overrides?: { model?: ModelProvider }): Wiring;
  /** Every key in the bucket, to check what was written where. */
  allKeys(): Promise<string[]>;
}

/** Registers hooks that start the emulators before the file's tests and stop them after. */
export function useLocalAws(): LocalAws {
  const state = {} as LocalAws;
  beforeAll(async () => {
    const emulators = await startEmulators();
    const env = {
      STEPWISE_TABLE: emulators.table,
      STEPWISE_BUCKET: emulators.bucket,
      STEPWISE_DYNAMODB_ENDPOINT: emulators.dynamoEndpoint,
      STEPWISE_S3_ENDPOINT: emulators.s3Endpoint,
      STEPWISE_PROVIDER: 'scripted',
      STEPWISE_MODEL: 'claude-test',
    };
    state.emulators = emulators;
    state.env = env;
    const modelFrom = modelWiring({ anthropic: anthropicFrom, bedrock: bedrockFrom });
    state.wiring = (overrides = {}) => wire(env, { model: overrides.model ?? modelFrom, workspaces: scopedWorkspaces });
    state.allKeys = async () => {
      const { s3 } = awsClients(readEnv(env));
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page: ListObjectsV2CommandOutput = await s3.send(
          new ListObjectsV2Command({ Bucket: emulators.bucket, ContinuationToken: token }),
        );
        for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key);
        token = page.NextContinuationToken;
      } while (token);
      return keys;
    };
  });
  afterAll(async () => {
    await state.emulators?.stop();
  });
  return state;
}
