import { CfnOutput, Lazy, Stack, type StackProps } from 'aws-cdk-lib';
import type * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import type { Construct } from 'constructs';
import { builtinTools } from '../functions/core/tools/builtin/builtin.js';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import { type ConsoleSignIn, StepwiseConsole } from './console.js';
import { ConsoleUsers } from './console-users.js';
import { StepwiseAgents, type StepwiseAgentsProps } from './stepwise-agents.js';

/** The web console of a deployment (docs/console.md, "Deployed"). */
export interface ConsoleSettings {
  /**
   * Create a Cognito user pool and a public app client (authorization code + PKCE) for signing in
   * to the console; the API then takes that pool's tokens (JWT auth) instead of `auth`.
   * @default none: the console signs in with `oidc` under JWT auth, and cannot sign in under IAM auth
   */
  readonly cognito?: { readonly domainPrefix: string; readonly reviewers?: boolean };
  /**
   * The console's OpenID client under your own JWT issuer (`auth.type: 'jwt'`): its client id, and
   * its endpoints when the issuer's discovery document cannot be read from a browser.
   * @default none
   */
  readonly oidc?: { readonly clientId: string; readonly scope?: string; readonly authorizationEndpoint?: string; readonly tokenEndpoint?: string; readonly logoutEndpoint?: string };
  /**
   * STREAM ORIGIN: the live stream's Lambda function URL, for CloudFront's stream paths (see `StepwiseConsoleProps.streamOrigin`).
   * @default none
   */
  readonly streamOrigin?: cloudfront.IOrigin;
}

export interface StepwiseStackProps extends StackProps, StepwiseAgentsProps {
  /**
   * Deploy the web console (S3 and CloudFront, the API on the same origin).
   * @default none (the CDK app turns it on from `stepwise:console` in cdk.json)
   */
  readonly console?: ConsoleSettings;
}

/** Stepwise in a stack of its own (`bin/app.ts`): one StepwiseAgents, its console if asked for, and their outputs. */
export class StepwiseStack extends Stack {
  public readonly agents: StepwiseAgents;
  public readonly console?: StepwiseConsole;
  public readonly consoleUsers?: ConsoleUsers;

  constructor(scope: Construct, id: string, props: StepwiseStackProps = {}) {
    super(scope, id, props);
    const cognito = props.console?.cognito;
    if (cognito && props.auth?.type === 'jwt') {
      throw new Error('console.cognito makes the API take the new user pool’s tokens; it cannot be combined with auth of type jwt (remove one).');
    }
    // The pool's callback is the console's address, known once the distribution below exists.
    this.consoleUsers = cognito
      ? new ConsoleUsers(this, 'ConsoleUsers', {
          domainPrefix: cognito.domainPrefix,
          ...(cognito.reviewers !== undefined ? { reviewers: cognito.reviewers } : {}),
          consoleUrl: Lazy.string({ produce: () => this.console?.url }),
        })
      : undefined;
    // "Default" leaves no trace in the logical ids: a stack deployed before StepwiseAgents
    // existed keeps every resource (the table and bucket above all) instead of replacing it.
    this.agents = new StepwiseAgents(this, 'Default', { ...props, ...(this.consoleUsers ? { auth: this.consoleUsers.apiAuth() } : {}) });
    new CfnOutput(this, 'ApiUrl', { value: this.agents.api.apiEndpoint });
    // Run events stream from here (GET /runs/{runId}/events, POST /agui): a Lambda function URL.
    new CfnOutput(this, 'StreamUrl', { value: this.agents.streamUrl.url });
    new CfnOutput(this, 'EventBusName', { value: this.agents.bus.eventBusName });
    new CfnOutput(this, 'DashboardName', { value: this.agents.dashboard.dashboardName });
    // IAM auth: attach these to the roles of callers (and of reviewers) of the API.
    const { callerPolicy, reviewerPolicy } = this.agents.frontDoor;
    if (callerPolicy) new CfnOutput(this, 'CallerPolicyArn', { value: callerPolicy.managedPolicyArn });
    if (reviewerPolicy) new CfnOutput(this, 'ReviewerPolicyArn', { value: reviewerPolicy.managedPolicyArn });

    if (props.console) {
      this.console = new StepwiseConsole(this, 'Console', {
        api: this.agents.api,
        signIn: this.consoleUsers?.signIn() ?? signInOf(props),
        tools: builtinTools.map((tool) => tool.name),
        gatedTools: props.approvalTools ?? [],
        models: this.agents.allowedModels,
        // The live stream on the console's origin too: CloudFront passes the stream paths to its
        // function URL. Not with a user pool of the stack's own: the stream function checks the
        // pool client's id, the client's callback is the distribution, and the distribution would
        // then need the function, a cycle; the console then reads runs without the stream (polling).
        ...(props.console.streamOrigin
          ? { streamOrigin: props.console.streamOrigin }
          : this.consoleUsers
            ? {}
            : { streamOrigin: new origins.FunctionUrlOrigin(this.agents.streamUrl) }),
      });
      new CfnOutput(this, 'ConsoleUrl', { value: this.console.url, description: 'The web console.' });
      if (this.consoleUsers) new CfnOutput(this, 'ConsoleUserPoolId', { value: this.consoleUsers.userPool.userPoolId, description: 'Add console users here.' });
    }
  }
}

/** The console's sign-in under the stack's own auth: its OpenID client under JWT auth, none under IAM. */
function signInOf(props: StepwiseStackProps): ConsoleSignIn {
  if (props.auth?.type !== 'jwt') return { type: 'iam' };
  const oidc = props.console?.oidc;
  if (!oidc) throw new Error('console.oidc.clientId is needed under JWT auth: the OpenID client the console signs in with (or use console.cognito).');
  const origins = [props.auth.issuer, oidc.tokenEndpoint].filter((u): u is string => Boolean(u)).map((u) => new URL(u).origin);
  return {
    type: 'oidc',
    issuer: props.auth.issuer,
    clientId: oidc.clientId,
    scope: oidc.scope ?? 'openid',
    ...(oidc.authorizationEndpoint ? { authorizationEndpoint: oidc.authorizationEndpoint } : {}),
    ...(oidc.tokenEndpoint ? { tokenEndpoint: oidc.tokenEndpoint } : {}),
    ...(oidc.logoutEndpoint ? { logoutEndpoint: oidc.logoutEndpoint } : {}),
    connectOrigins: [...new Set(origins)],
  };
}
