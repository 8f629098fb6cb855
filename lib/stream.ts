import { ArnFormat, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { ApiAuth } from './front-door.js';
import { StepwiseFunction } from './function.js';
import type { Storage } from './storage.js';
import { defaultMaxStreamsPerCaller } from '../functions/core/stream/types.js';

export interface LiveStreamProps {
  readonly storage: Storage;
  /** The orchestrator, which `POST /agui` and `POST /a2a` start a run of, and A2A's CancelTask stops. */
  readonly orchestrator: sfn.StateMachine;
  /** The settings the API function runs with (callers, intake, storage), shared so both read callers alike. */
  readonly apiEnvironment: Readonly<Record<string, string>>;
  /**
   * The deployment's agent and workflow definitions as esbuild `define`, bundled as into the API
   * function: `POST /agui` checks run requests against them.
   * @default {} (the built-ins only)
   */
  readonly bundledDefinitions?: Readonly<Record<string, string>>;
  /**
   * How callers authenticate: the HTTP API's setting, enforced the same way at the function URL.
   * @default { type: 'iam' }
   */
  readonly auth?: ApiAuth;
  /**
   * The HTTP API's function, whose A2A agent card names this URL's `/a2a` as the JSON-RPC interface
   * (`STEPWISE_A2A_URL`, docs/a2a.md).
   * @default none (the card names its own origin)
   */
  readonly apiFunction?: lambda.Function;
  /** IAM auth: the callers' policy, which gains the right to open the stream URL. */
  readonly callerPolicy?: iam.ManagedPolicy;
  /**
   * The most event streams open at once: the stream function's reserved concurrency (one open
   * stream holds one execution for up to `maxStream`), so watchers can never take the
   * concurrency the agent loop's functions need. Further streams are throttled (HTTP 429) until
   * one ends. A reservation must leave the account 100 unreserved executions: an account whose
   * concurrency quota is under 200 lowers it, or says `'unreserved'` (no reservation, no cap).
   * @default 100
   */
  readonly maxConcurrentStreams?: number | 'unreserved';
  /**
   * The most event streams one caller may have open at once; past it `429 TooManyStreams`.
   * @default 10
   */
  readonly maxStreamsPerCaller?: number;
}

/** The streams open at once by default: a tenth of the default account quota of 1,000 concurrent executions. */
export const defaultMaxConcurrentStreams = 100;

/** The stream function's timeout: Lambda's longest. */
export const streamTimeout = Duration.minutes(15);

/**
 * The longest one stream stays open: a minute below the timeout, so a stream ends cleanly, with
 * its last events written, and the client resumes from its cursor, rather than being cut off.
 */
export const maxStream = streamTimeout.minus(Duration.minutes(1));

/**
 * The live event stream (docs/deploying.md, "The stream URL"): a function serving
 * the app's stream routes (`GET /runs/{runId}/events`, `POST /agui`) behind a Lambda function URL
 * in `RESPONSE_STREAM` mode. The HTTP API cannot stream, and an API Gateway REST API with the
 * `STREAM` transfer mode would be a second API type with an auth of its own; a function URL takes
 * the same IAM signatures as the HTTP API (`AWS_IAM`), and in JWT mode is open (`NONE`) with the
 * token verified in the function against the same issuer, audiences and claims.
 */
export class LiveStream extends Construct {
  public readonly function: StepwiseFunction;
  /** Where clients open streams (output `StreamUrl`). */
  public readonly url: lambda.FunctionUrl;
  public readonly timeout = streamTimeout;
  public readonly maxStream = maxStream;

  constructor(scope: Construct, id: string, props: LiveStreamProps) {
    super(scope, id);
    const { storage, orchestrator } = props;
    const auth = props.auth ?? { type: 'iam' };
    const reserved = props.maxConcurrentStreams ?? defaultMaxConcurrentStreams;
    if (props.maxStreamsPerCaller !== undefined && !(Number.isInteger(props.maxStreamsPerCaller) && props.maxStreamsPerCaller > 0)) {
      throw new Error(`maxStreamsPerCaller must be a positive whole number, not ${props.maxStreamsPerCaller}.`);
    }
    this.function = new StepwiseFunction(this, 'Stream', {
      handler: 'stream',
      timeout: this.timeout,
      environment: {
        ...props.apiEnvironment,
        STEPWISE_STREAM_MAX_SECONDS: String(this.maxStream.toSeconds()),
        STEPWISE_MAX_STREAMS_PER_CALLER: String(props.maxStreamsPerCaller ?? defaultMaxStreamsPerCaller),
        ...(auth.type === 'jwt'
          ? {
              STEPWISE_JWT_ISSUER: auth.issuer,
              STEPWISE_JWT_AUDIENCE: auth.audience.join(','),
              ...(auth.jwksUri ? { STEPWISE_JWKS_URL: auth.jwksUri } : {}),
            }
          : {}),
      },
      ...(reserved === 'unreserved' ? {} : { reservedConcurrentExecutions: reserved }),
      ...(props.bundledDefinitions ? { define: props.bundledDefinitions } : {}),
    });
    const fn = this.function.function;

    // What a stream reads: the run record and its approvals, the conversations (large bodies in
    // S3), the live attempts; nothing it writes.
    storage.grantApprovals(fn, 'read');
    storage.grantConversationRead(fn);
    storage.grantLiveText(fn, 'read');
    // POST /agui starts a run as POST /runs does: the run record, idempotency key and session
    // lock, the caller's running runs, its agents' definitions, the orchestrator's start.
    storage.grantRunRecords(fn, 'readWrite');
    storage.grantIntakeRecords(fn);
    // Each caller's open streams: a slot taken when a stream opens, given back when it ends.
    storage.grantStreamSlots(fn);
    storage.grantAgentDefinitions(fn, 'write');
    orchestrator.grantStartExecution(fn);
    // ... and, with a daily limit, refuses it once the caller's day is spent (that day's sum).
    if (props.apiEnvironment.STEPWISE_DAILY_MAX_USD !== undefined) storage.grantSpend(fn, 'read');
    // A2A's CancelTask (POST /a2a) cancels as POST /runs/{runId}/cancel does: it stops the run's orchestrator execution.
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['states:StopExecution'],
        resources: [
          Stack.of(this).formatArn({ service: 'states', resource: 'execution', resourceName: `${orchestrator.stateMachineName}:*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
        ],
      }),
    );
    const orchestratorId = Stack.of(this).getLogicalId(orchestrator.node.defaultChild as sfn.CfnStateMachine);
    Validations.of(this.function.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<${orchestratorId}.Name>:*]`,
      reason: 'Executions are named per run at run time; StopExecution (A2A CancelTask) reaches executions of the orchestrator only.',
    });

    this.url = fn.addFunctionUrl({
      authType: auth.type === 'iam' ? lambda.FunctionUrlAuthType.AWS_IAM : lambda.FunctionUrlAuthType.NONE,
      invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
    });
    props.apiFunction?.addEnvironment('STEPWISE_A2A_URL', `${this.url.url}a2a`);
    // A function URL in AWS_IAM mode needs both actions from its caller (since October 2025); the
    // second only through the URL, so the policy does not let callers invoke the function directly.
    props.callerPolicy?.addStatements(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunctionUrl'],
        resources: [fn.functionArn],
        conditions: { StringEquals: { 'lambda:FunctionUrlAuthType': lambda.FunctionUrlAuthType.AWS_IAM } },
      }),
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [fn.functionArn],
        conditions: { Bool: { 'lambda:InvokedViaFunctionUrl': 'true' } },
      }),
    );
  }
}
