import { DefaultStackSynthesizer, DockerImage, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { fileURLToPath } from 'node:url';
import { Construct } from 'constructs';
import { buildConsole, consoleBase, writeConsole } from '../console/build.js';
import { consoleCsp } from '../console/csp.js';
import type { ConsoleConfig, OidcConfig } from '../console/src/config.js';

/** How the console signs people in: an OpenID provider whose tokens the API's JWT authorizer takes, or none (IAM auth). */
export type ConsoleSignIn = { readonly type: 'iam' } | ({ readonly type: 'oidc' } & OidcConfig & { readonly connectOrigins: string[] });

export interface StepwiseConsoleProps {
  /** The HTTP API: CloudFront sends the API's paths to it, so the console calls it on its own origin. */
  readonly api: apigw.IHttpApi;
  /** Sign-in, written to the console's config.json (and its token endpoint's origin to the CSP). */
  readonly signIn: ConsoleSignIn;
  /** Tools a run may ask to gate, and those the deployment gates in every run. */
  readonly tools: string[];
  readonly gatedTools: string[];
  /** The models a run may ask for, the deployment's first. */
  readonly models: string[];
  /**
   * STREAM ORIGIN: the live stream's Lambda function URL (response streaming), which the stream's
   * deployment adds. CloudFront sends `/runs/*\/events` and `/agui` to it. Without it those paths
   * go to the HTTP API, which has no such route, and the console reads the run's events as pages instead.
   * @default none
   */
  readonly streamOrigin?: cloudfront.IOrigin;
  /**
   * What happens to the console's buckets when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** The API's paths, sent to the HTTP API (everything `lib/front-door.ts` routes). */
export const consoleApiPaths = ['/runs', '/runs/*', '/agents', '/openapi.json'];
/** The live stream's paths, sent to the stream origin when there is one. */
export const consoleStreamPaths = ['/runs/*/events', '/agui'];

/**
 * The web console (docs/console.md, "Deployed"): its files in a private S3 bucket read by
 * CloudFront through origin access control, the API on the same origin (CloudFront behaviours for
 * the API paths to the HTTP API, and for the stream paths to the stream's origin), a strict CSP on
 * every page, hashed assets cached for a year and the page and its config.json always revalidated.
 */
export class StepwiseConsole extends Construct {
  public readonly bucket: s3.Bucket;
  public readonly distribution: cloudfront.Distribution;
  /** Where people open the console: `https://<distribution>/console/`. */
  public readonly url: string;

  constructor(scope: Construct, id: string, props: StepwiseConsoleProps) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const stack = Stack.of(this);

    // CloudFront's standard logs need ACLs on their bucket; the site bucket's access logs go there too.
    const logBucket = new s3.Bucket(this, 'Logs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
      enforceSSL: true,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy,
    });
    Validations.of(logBucket).acknowledge({ id: 'AwsSolutions-S1', reason: 'This is the console’s log bucket itself; logging it to itself would loop.' });

    this.bucket = new s3.Bucket(this, 'Site', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      serverAccessLogsBucket: logBucket,
      serverAccessLogsPrefix: 'site/',
      removalPolicy,
    });

    const connect = props.signIn.type === 'oidc' ? props.signIn.connectOrigins : [];
    // The page and the API answers get the same security headers but their own CSP: API answers
    // (workspace files among them) are data, nothing in them may run or be framed.
    const headers = (id: string, comment: string, csp: string) =>
      new cloudfront.ResponseHeadersPolicy(this, id, {
        comment,
        securityHeadersBehavior: {
          contentSecurityPolicy: { contentSecurityPolicy: csp, override: true },
          contentTypeOptions: { override: true },
          frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
          referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
          strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
        },
      });
    const pageHeaders = headers('PageHeaders', 'Stepwise console: CSP and security headers.', consoleCsp({ connect }));
    const apiHeaders = headers('ApiHeaders', 'Stepwise API behind the console: data only.', "default-src 'none'; frame-ancestors 'none'; sandbox");

    // Any console path that is not a file is the page (it routes itself); `/` and `/console` lead to it.
    const pages = new cloudfront.Function(this, 'Pages', {
      comment: 'Stepwise console: page paths to index.html.',
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      code: cloudfront.FunctionCode.fromInline(
        [
          'function handler(event) {',
          '  var uri = event.request.uri;',
          "  if (uri === '/' || uri === '/console') {",
          "    return { statusCode: 301, statusDescription: 'Moved Permanently', headers: { location: { value: '/console/' } } };",
          '  }',
          "  if (uri.indexOf('/console/assets/') !== 0 && uri !== '/console/config.json') event.request.uri = '/console/index.html';",
          '  return event.request;',
          '}',
        ].join('\n'),
      ),
    });

    const apiOrigin = new origins.HttpOrigin(`${props.api.apiId}.execute-api.${stack.region}.${stack.urlSuffix}`, {
      protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
    });
    // Not cached; every viewer header but Host (API Gateway routes by its own) reaches the API, Authorization included.
    const passThrough = (origin: cloudfront.IOrigin, responseHeadersPolicy: cloudfront.IResponseHeadersPolicy): cloudfront.BehaviorOptions => ({
      origin,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      responseHeadersPolicy,
    });
    const behaviors: Record<string, cloudfront.BehaviorOptions> = {};
    // The stream's paths first: CloudFront takes the first pattern that matches.
    if (props.streamOrigin) for (const path of consoleStreamPaths) behaviors[path] = passThrough(props.streamOrigin, apiHeaders);
    for (const path of consoleApiPaths) behaviors[path] = passThrough(apiOrigin, apiHeaders);

    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Stepwise console and API',
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        // Honours each object's Cache-Control: a year for hashed assets, revalidation for the page.
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: pageHeaders,
        functionAssociations: [{ function: pages, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST }],
      },
      additionalBehaviors: behaviors,
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      enableLogging: true,
      logBucket,
      logFilePrefix: 'cloudfront/',
    });
    this.url = `https://${this.distribution.distributionDomainName}${consoleBase}`;
    for (const [rule, reason] of [
      ['AwsSolutions-CFR1', 'The console is for the deployment’s own callers, who sign in; it has no audience to restrict by country.'],
      ['AwsSolutions-CFR2', 'Every request is authenticated by the API; the API stage throttles. Attach a web ACL for public exposure (a cost per month).'],
      ['AwsSolutions-CFR4', 'The distribution uses its default *.cloudfront.net certificate, whose TLS policy cannot be set; a custom domain and certificate would allow TLSv1.2_2021.'],
    ] as const) {
      Validations.of(this.distribution).acknowledge({ id: rule, reason });
    }

    // The files: built by esbuild at synth (local bundling, no Docker), uploaded under console/.
    const site = s3deploy.Source.asset(consoleSourceDir(), {
      bundling: {
        // Only if the local build could not run; it always can where `cdk synth` runs (esbuild is a dependency).
        image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:22-alpine'),
        local: {
          tryBundle(outputDir) {
            writeConsole(buildConsole(), outputDir, { record: false });
            return true;
          },
        },
      },
    });
    const config: ConsoleConfig = {
      auth: props.signIn.type,
      ...(props.signIn.type === 'oidc' ? { oidc: oidcOf(props.signIn) } : {}),
      tools: props.tools,
      gatedTools: props.gatedTools,
      models: props.models,
    };
    // One role for both uploads (they share CDK's upload function), with its own log group and no managed policy.
    const uploadLogs = new logs.LogGroup(this, 'UploadLogs', { retention: logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY });
    const uploader = new iam.Role(this, 'UploadRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'Copies the console files into its bucket during deployments.',
    });
    uploadLogs.grantWrite(uploader);
    const upload = { destinationBucket: this.bucket, destinationKeyPrefix: consoleBase.slice(1), role: uploader, logGroup: uploadLogs, prune: false };
    // Hashed assets first, kept for a year; old ones stay, so a page loaded before a deploy still finds its files.
    const assets = new s3deploy.BucketDeployment(this, 'Assets', {
      ...upload,
      sources: [site],
      exclude: ['index.html'],
      cacheControl: [s3deploy.CacheControl.fromString('public, max-age=31536000, immutable')],
    });
    // Then the page and its settings, which name the assets: always revalidated.
    const page = new s3deploy.BucketDeployment(this, 'Page', {
      ...upload,
      sources: [site, s3deploy.Source.jsonData('config.json', config)],
      exclude: ['*'],
      include: ['index.html', 'config.json'],
      cacheControl: [s3deploy.CacheControl.noCache()],
    });
    page.node.addDependency(assets);
    // CDK's BucketDeployment grants its upload function object-level access to the asset bucket and to
    // this bucket; it runs only during deployments, and only with this role.
    const siteId = stack.getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket);
    // The CDK asset bucket by its default name (a custom bucket name would be reported by cdk-nag, not hidden).
    const qualifier = stack.synthesizer.bootstrapQualifier ?? DefaultStackSynthesizer.DEFAULT_QUALIFIER;
    const assetBucket = DefaultStackSynthesizer.DEFAULT_FILE_ASSETS_BUCKET_NAME.replace('${Qualifier}', qualifier).replace(/\$\{([^}]+)\}/g, '<$1>');
    const granted = [
      'Action::s3:GetObject*',
      'Action::s3:GetBucket*',
      'Action::s3:List*',
      'Action::s3:DeleteObject*',
      'Action::s3:Abort*',
      `Resource::<${siteId}.Arn>/*`,
      `Resource::arn:<AWS::Partition>:s3:::${assetBucket}/*`,
    ];
    for (const finding of granted) {
      Validations.of(uploader).acknowledge({
        id: `AwsSolutions-IAM5[${finding}]`,
        reason: 'BucketDeployment copies the console’s files from the CDK asset bucket into the console’s bucket during deployments; the grant covers those two buckets only.',
      });
    }
    // The upload function is one per stack, made by aws-cdk-lib beside this construct.
    for (const child of stack.node.children.filter((c) => c.node.id.startsWith('Custom::CDKBucketDeployment'))) {
      Validations.of(child).acknowledge({
        id: 'AwsSolutions-L1',
        reason: 'The runtime of CDK’s BucketDeployment upload function is chosen by aws-cdk-lib; it runs only during deployments.',
      });
    }
  }
}

/** The console's sources (the folder hashed into the asset when bundling is skipped). */
function consoleSourceDir(): string {
  return fileURLToPath(new URL('../console/', import.meta.url));
}


function oidcOf(signIn: Extract<ConsoleSignIn, { type: 'oidc' }>): OidcConfig {
  const { type: _type, connectOrigins: _origins, ...oidc } = signIn;
  return oidc;
}
