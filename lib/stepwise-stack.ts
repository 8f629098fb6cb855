import { Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { StepwiseFunction } from './function.js';
import { Storage } from './storage.js';

export interface StepwiseStackProps extends StackProps {
  /** @default 'anthropic' */
  readonly provider?: 'anthropic' | 'scripted';
  /** @default 'claude-sonnet-4-5' */
  readonly model?: string;
  /** @default 8192 */
  readonly maxTokens?: number;
}

/** Stepwise in one stack: storage and the step functions. */
export class StepwiseStack extends Stack {
  public readonly storage: Storage;
  public readonly inference: StepwiseFunction;
  public readonly tool: StepwiseFunction;

  constructor(scope: Construct, id: string, props: StepwiseStackProps = {}) {
    super(scope, id, props);
    this.storage = new Storage(this, 'Storage');
    const { table, bucket } = this.storage;
    const shared = { STEPWISE_TABLE: table.tableName, STEPWISE_BUCKET: bucket.bucketName };

    this.inference = new StepwiseFunction(this, 'Inference', {
      handler: 'inference',
      timeout: Duration.minutes(5),
      environment: {
        ...shared,
        STEPWISE_PROVIDER: props.provider ?? 'anthropic',
        STEPWISE_MODEL: props.model ?? 'claude-sonnet-4-5',
        STEPWISE_MAX_TOKENS: String(props.maxTokens ?? 8192),
        // One model call's budget stays below the Lambda timeout (DESIGN invariant 3).
        STEPWISE_MODEL_TIMEOUT_MS: String(Duration.minutes(4).toMilliseconds()),
      },
    });
    this.storage.grantConversationMemory(this.inference.function);
    this.storage.grantRunRecords(this.inference.function, 'update');

    this.tool = new StepwiseFunction(this, 'Tool', { handler: 'tool', timeout: Duration.minutes(2), environment: shared });
    this.storage.grantConversationMemory(this.tool.function);
    this.storage.grantWorkspaces(this.tool.function);
  }
}
