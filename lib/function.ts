import { Duration, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { fileURLToPath } from 'node:url';
import { bundleBanner, bundleMainFields, bundleTarget, externalModulesOf } from './bundling.js';

export interface StepwiseFunctionProps {
  /** The handler module under `functions/handlers/`, without extension, e.g. `inference`. */
  readonly handler: string;
  /** @default Duration.seconds(30) */
  readonly timeout?: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default {} */
  readonly environment?: Record<string, string>;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** @default none (the account's unreserved concurrency) */
  readonly reservedConcurrentExecutions?: number;
  /**
   * Identifiers esbuild replaces with constant expressions in the bundle (its `define`): settings
   * too long for the environment's 4 KB, such as the deployment's agent definitions.
   * @default {} (none)
   */
  readonly define?: Readonly<Record<string, string>>;
  /**
   * Whether the function sends the spans of runs itself (docs/traces.md): it may then write to
   * the X-Ray OTLP endpoint (`xray:PutSpans`). Every function is told where traces go, so the
   * intake records each run's trace.
   * @default false
   */
  readonly sendsSpans?: boolean;
}

/**
 * Where the functions send OTLP traces (cdk.json context `stepwise:traces`): `xray` (the default,
 * the X-Ray OTLP endpoint of the stack's region, signed with SigV4), `off`, or the URL of another
 * OTLP/HTTP traces endpoint (`…/v1/traces`).
 */
export function tracesEnvironment(scope: Construct): Record<string, string> {
  const setting = String(scope.node.tryGetContext('stepwise:traces') ?? 'xray');
  if (setting === 'off') return {};
  const common = { OTEL_SERVICE_NAME: 'stepwise', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' };
  if (setting !== 'xray') {
    if (!/^https?:\/\/\S+$/.test(setting)) throw new Error(`stepwise:traces must be "xray", "off" or an OTLP/HTTP traces URL; got ${JSON.stringify(setting)}.`);
    return { ...common, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: setting };
  }
  const stack = Stack.of(scope);
  return { ...common, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `https://xray.${stack.region}.${stack.urlSuffix}/v1/traces`, STEPWISE_OTLP_SIGV4: 'xray' };
}

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * The defaults every Stepwise Lambda shares (habit 8, docs/code-habits.md): Node.js 22 on ARM64, an ESM
 * bundle built by the local esbuild (no Docker) with source maps, its own log group, X-Ray.
 */
export class StepwiseFunction extends Construct {
  public readonly function: nodejs.NodejsFunction;
  public readonly logGroup: logs.LogGroup;
  /** The function's own role: no managed policies, only what its grants add. */
  public readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: StepwiseFunctionProps) {
    super(scope, id);
    this.logGroup = new logs.LogGroup(this, 'Logs', { retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH });
    this.role = new iam.Role(this, 'Role', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );
    const traces = tracesEnvironment(this);
    if (props.sendsSpans && traces.STEPWISE_OTLP_SIGV4) {
      // The X-Ray OTLP endpoint takes spans signed for `xray:PutSpans` (no resource-level permissions).
      this.role.addToPolicy(new iam.PolicyStatement({ actions: ['xray:PutSpans'], resources: ['*'] }));
    }
    this.function = new nodejs.NodejsFunction(this, 'Function', {
      entry: `${root}functions/handlers/${props.handler}.ts`,
      handler: 'handler',
      role: this.role,
      projectRoot: root,
      depsLockFilePath: `${root}package-lock.json`,
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? Duration.seconds(30),
      ...(props.reservedConcurrentExecutions !== undefined ? { reservedConcurrentExecutions: props.reservedConcurrentExecutions } : {}),
      tracing: lambda.Tracing.ACTIVE,
      logGroup: this.logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      // STEPWISE_HANDLER names the module, so the local runtime can bind this function to it.
      environment: { NODE_OPTIONS: '--enable-source-maps', STEPWISE_HANDLER: props.handler, ...traces, ...props.environment },
      bundling: {
        format: nodejs.OutputFormat.ESM,
        target: bundleTarget,
        minify: true,
        sourceMap: true,
        // Bundle the AWS SDK too: pinned versions, and only the clients a function imports.
        externalModules: externalModulesOf(props.handler),
        mainFields: bundleMainFields,
        banner: bundleBanner,
        ...(props.define && Object.keys(props.define).length ? { define: { ...props.define } } : {}),
      },
    });
    Validations.of(this).acknowledge(
      {
        id: 'AwsSolutions-L1',
        reason: 'Stepwise targets the Node.js 22 Lambda runtime on purpose (its supported engine); newer runtimes are adopted deliberately.',
      },
      {
        id: `AwsSolutions-IAM5[Resource::<${Stack.of(this).getLogicalId(this.logGroup.node.defaultChild as logs.CfnLogGroup)}.Arn>]`,
        reason: 'Lambda names its log streams at run time; the grant is limited to this function\'s own log group.',
      },
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'X-Ray PutTraceSegments, PutTelemetryRecords and PutSpans (the OTLP endpoint) support no resource-level permissions.',
      },
    );
  }
}
