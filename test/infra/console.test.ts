import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { App, Stack } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { Match } from 'aws-cdk-lib/assertions';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import { describe, expect, it } from 'vitest';
import { consoleCsp } from '../../console/csp.js';
import { StepwiseConsole } from '../../lib/console.js';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';

const cachingDisabled = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
const cachingOptimized = '658327ea-f89d-4fab-a63d-7e88639e58f6';
const allViewerExceptHost = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';

interface Behavior {
  PathPattern?: string;
  TargetOriginId: string;
  CachePolicyId: string;
  OriginRequestPolicyId?: string;
  AllowedMethods: string[];
  ViewerProtocolPolicy: string;
  ResponseHeadersPolicyId: unknown;
  FunctionAssociations?: unknown[];
}
interface DistributionConfig {
  DefaultCacheBehavior: Behavior;
  CacheBehaviors: Behavior[];
  Origins: { Id: string; DomainName: unknown; OriginAccessControlId?: unknown; CustomOriginConfig?: { OriginProtocolPolicy: string } }[];
  Logging?: unknown;
}

function distributionOf(template: ReturnType<typeof synthesize>['template']): DistributionConfig {
  const [distribution] = Object.values(template.findResources('AWS::CloudFront::Distribution')) as { Properties: { DistributionConfig: DistributionConfig } }[];
  if (!distribution) throw new Error('No distribution.');
  return distribution.Properties.DistributionConfig;
}

describe('StepwiseStack with the console', () => {
  const { template, violations } = synthesize(
    (app) => new StepwiseStack(app, 'Stepwise', { console: { streamOrigin: new origins.HttpOrigin('stream.example.com') }, approvalTools: ['write_file'] }),
    { nag: true },
  );
  const config = distributionOf(template);
  const originOf = (id: string) => config.Origins.find((o) => o.Id === id);

  it('passes cdk-nag AwsSolutionsChecks, every exception acknowledged with a reason', () => {
    expect(violations).toEqual([]);
  });

  it('serves the console from a private, encrypted bucket that only the distribution reads, through origin access control', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      BucketEncryption: Match.anyValue(),
      LoggingConfiguration: { LogFilePrefix: 'site/', DestinationBucketName: Match.anyValue() },
    });
    const site = originOf(config.DefaultCacheBehavior.TargetOriginId);
    expect(site?.OriginAccessControlId).toBeDefined();
    template.hasResourceProperties('AWS::CloudFront::OriginAccessControl', {
      OriginAccessControlConfig: { OriginAccessControlOriginType: 's3', SigningBehavior: 'always', SigningProtocol: 'sigv4' },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Action: 's3:GetObject', Effect: 'Allow', Principal: { Service: 'cloudfront.amazonaws.com' }, Condition: { StringEquals: { 'AWS:SourceArn': Match.anyValue() } } }),
        ]),
      },
    });
    expect(config.DefaultCacheBehavior).toMatchObject({ ViewerProtocolPolicy: 'redirect-to-https', CachePolicyId: cachingOptimized, AllowedMethods: ['GET', 'HEAD'] });
    expect(config.Logging).toMatchObject({ Prefix: 'cloudfront/' });
  });

  it('puts the API on the same origin: its paths to the HTTP API, the stream’s first to the stream origin, none cached, Authorization passed on', () => {
    expect(config.CacheBehaviors.map((b) => b.PathPattern)).toEqual(['/runs/*/events', '/agui', '/runs', '/runs/*', '/agents', '/openapi.json']);
    for (const behavior of config.CacheBehaviors) {
      expect(behavior).toMatchObject({
        CachePolicyId: cachingDisabled,
        OriginRequestPolicyId: allViewerExceptHost,
        ViewerProtocolPolicy: 'https-only',
        AllowedMethods: expect.arrayContaining(['GET', 'POST', 'OPTIONS']),
      });
    }
    const [events, agui, ...api] = config.CacheBehaviors;
    expect(originOf(events?.TargetOriginId ?? '')?.DomainName).toBe('stream.example.com');
    expect(agui?.TargetOriginId).toBe(events?.TargetOriginId);
    const apiOrigin = originOf(api[0]?.TargetOriginId ?? '');
    expect(new Set(api.map((b) => b.TargetOriginId)).size).toBe(1);
    expect(JSON.stringify(apiOrigin?.DomainName)).toMatch(/FrontDoorHttpApi.*execute-api/);
    expect(apiOrigin?.CustomOriginConfig?.OriginProtocolPolicy).toBe('https-only');
  });

  it('sends every page with the console’s CSP and security headers, and API answers with a data-only policy', () => {
    template.hasResourceProperties('AWS::CloudFront::ResponseHeadersPolicy', {
      ResponseHeadersPolicyConfig: {
        SecurityHeadersConfig: {
          ContentSecurityPolicy: { ContentSecurityPolicy: consoleCsp(), Override: true },
          ContentTypeOptions: { Override: true },
          FrameOptions: { FrameOption: 'DENY', Override: true },
          ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
          StrictTransportSecurity: Match.objectLike({ AccessControlMaxAgeSec: 31536000 }),
        },
      },
    });
    template.hasResourceProperties('AWS::CloudFront::ResponseHeadersPolicy', {
      ResponseHeadersPolicyConfig: { SecurityHeadersConfig: Match.objectLike({ ContentSecurityPolicy: { ContentSecurityPolicy: "default-src 'none'; frame-ancestors 'none'; sandbox", Override: true } }) },
    });
  });

  it('answers every console path with the page, but its assets and config.json, and sends / to /console/', () => {
    const [fn] = Object.values(template.findResources('AWS::CloudFront::Function')) as { Properties: { FunctionCode: string } }[];
    const handler = (uri: string) => runInNewContext(`${fn?.Properties.FunctionCode}\nhandler(event)`, { event: { request: { uri } } }) as Record<string, unknown>;
    expect(handler('/console/runs/abc')).toEqual({ uri: '/console/index.html' });
    expect(handler('/console/review')).toEqual({ uri: '/console/index.html' });
    expect(handler('/console/callback')).toEqual({ uri: '/console/index.html' });
    expect(handler('/console/assets/main-ABCD1234.js')).toEqual({ uri: '/console/assets/main-ABCD1234.js' });
    expect(handler('/console/config.json')).toEqual({ uri: '/console/config.json' });
    expect(handler('/')).toMatchObject({ statusCode: 301, headers: { location: { value: '/console/' } } });
    expect(handler('/console')).toMatchObject({ statusCode: 301 });
  });

  it('uploads the hashed assets for a year, then the page and its config.json to be revalidated', () => {
    const deployments = template.findResources('Custom::CDKBucketDeployment') as Record<string, { Properties: Record<string, unknown>; DependsOn?: string[] }>;
    const [assetsId, assets] = Object.entries(deployments).find(([id]) => id.startsWith('ConsoleAssets')) ?? [];
    const [, page] = Object.entries(deployments).find(([id]) => id.startsWith('ConsolePage')) ?? [];
    expect(assets?.Properties).toMatchObject({
      DestinationBucketKeyPrefix: 'console/',
      Exclude: ['index.html'],
      Prune: false,
      SystemMetadata: { 'cache-control': 'public, max-age=31536000, immutable' },
    });
    expect(page?.Properties).toMatchObject({
      DestinationBucketKeyPrefix: 'console/',
      Exclude: ['*'],
      Include: ['index.html', 'config.json'],
      SystemMetadata: { 'cache-control': 'no-cache' },
    });
    expect(page?.Properties.SourceObjectKeys).toHaveLength(2);
    expect(page?.DependsOn).toEqual(expect.arrayContaining([assetsId]));
  });

  it('gives the upload function a role of its own with no managed policy, and its own log group', () => {
    const roles = template.findResources('AWS::IAM::Role') as Record<string, { Properties: Record<string, unknown> }>;
    const upload = Object.entries(roles).find(([id]) => id.startsWith('ConsoleUploadRole'));
    expect(upload?.[1].Properties.ManagedPolicyArns).toBeUndefined();
    template.hasResourceProperties('AWS::Lambda::Function', { Role: { 'Fn::GetAtt': [upload?.[0], 'Arn'] }, LoggingConfig: { LogGroup: Match.anyValue() } });
  });

  it('prints the console’s address', () => {
    template.hasOutput('ConsoleUrl', { Value: { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [Match.stringLikeRegexp('^ConsoleDistribution'), 'DomainName'] }, '/console/']] } });
  });
});

describe('StepwiseStack with a Cognito user pool for the console', () => {
  const { template, violations } = synthesize((app) => new StepwiseStack(app, 'Stepwise', { console: { cognito: { domainPrefix: 'stepwise-test' } } }), { nag: true });

  it('passes cdk-nag AwsSolutionsChecks, every exception acknowledged with a reason', () => {
    expect(violations).toEqual([]);
  });

  it('creates a pool whose users an administrator adds, and a public client signing in by code with PKCE at the console', () => {
    template.hasResourceProperties('AWS::Cognito::UserPool', { AdminCreateUserConfig: { AllowAdminCreateUserOnly: true } });
    const console = { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [Match.stringLikeRegexp('^ConsoleDistribution'), 'DomainName'] }, '/console/']] };
    template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
      GenerateSecret: false,
      AllowedOAuthFlows: ['code'],
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthScopes: ['openid', 'email', 'profile'],
      CallbackURLs: [{ 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [Match.stringLikeRegexp('^ConsoleDistribution'), 'DomainName'] }, '/console/callback']] }],
      LogoutURLs: [console],
    });
    template.hasOutput('ConsoleUserPoolId', Match.anyValue());
  });

  it('makes the API take the pool’s tokens for the console’s client', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      JwtConfiguration: {
        Audience: [{ Ref: Match.stringLikeRegexp('^ConsoleUsersPoolConsole') }],
        Issuer: { 'Fn::Join': ['', ['https://cognito-idp.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, '/', { Ref: Match.stringLikeRegexp('^ConsoleUsersPool') }]] },
      },
    });
  });

  it('lets the console fetch its token from the pool’s domain, and nothing else beyond its origin', () => {
    const policies = Object.values(template.findResources('AWS::CloudFront::ResponseHeadersPolicy')).map((p) => JSON.stringify(p));
    const page = policies.find((p) => p.includes('trusted-types'));
    expect(page).toMatch(/connect-src 'self' https:\/\/","?\{"Ref":"ConsoleUsersPoolDomain[0-9A-F]+"\}\s*,?".auth.","?\{"Ref":"AWS::Region"\},".amazoncognito.com; base-uri/);
  });

  it('refuses a user pool beside an issuer of the API’s own', () => {
    expect(
      () => new StepwiseStack(new App(), 'Both', { auth: { type: 'jwt', issuer: 'https://id.example.com', audience: ['x'] }, console: { cognito: { domainPrefix: 'p' } } }),
    ).toThrow(/cannot be combined with auth of type jwt/);
  });
});

describe('the console asset', () => {
  it('is the esbuild build, made at synth: the page, hashed assets, no record of inputs', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'stepwise-console-cdk-'));
    try {
      const app = new App({ outdir });
      const stack = new Stack(app, 'Site');
      new StepwiseConsole(stack, 'Console', { api: new apigw.HttpApi(stack, 'Api'), signIn: { type: 'iam' }, tools: [], gatedTools: [], models: ['m'] });
      app.synth();
      const bundled = readdirSync(outdir).filter((name) => name.startsWith('asset.') && existsSync(join(outdir, name, 'index.html')));
      expect(bundled).toHaveLength(1);
      const files = readdirSync(join(outdir, bundled[0] ?? '', 'assets'));
      expect(files.some((f) => /^main-[A-Z0-9]{8}\.js$/.test(f))).toBe(true);
      expect(files.some((f) => /^main-[A-Z0-9]{8}\.css$/.test(f))).toBe(true);
      expect(readdirSync(outdir).some((name) => name.endsWith('.meta.json') && name.startsWith('asset.'))).toBe(false);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});

describe('the console and the live stream', () => {
  it('passes the stream paths to the stream function URL, before the API paths, on the console origin', () => {
    const { template } = synthesize((app) => new StepwiseStack(app, 'ConsoleStream', { console: {} }));
    const config = distributionOf(template);
    const events = config.CacheBehaviors.findIndex((b) => b.PathPattern === '/runs/*/events');
    const runs = config.CacheBehaviors.findIndex((b) => b.PathPattern === '/runs/*');
    expect(events).toBeGreaterThanOrEqual(0);
    expect(events).toBeLessThan(runs);
    const origin = config.Origins.find((o) => o.Id === config.CacheBehaviors[events]?.TargetOriginId);
    expect(JSON.stringify(origin?.DomainName)).toContain('LiveStreamFunctionFunctionUrl');
    expect(config.CacheBehaviors[events]?.CachePolicyId).toBe(cachingDisabled);
    expect(config.CacheBehaviors.find((b) => b.PathPattern === '/agui')?.TargetOriginId).toBe(origin?.Id);
  });
});
