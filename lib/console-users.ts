import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';
import type { ConsoleSignIn } from './console.js';
import type { ApiAuth } from './front-door.js';

export interface ConsoleUsersProps {
  /** The prefix of the Cognito domain of the sign-in pages, `<prefix>.auth.<region>.amazoncognito.com`; unique in the Region. */
  readonly domainPrefix: string;
  /** The console's address (`https://…/console/`), once the distribution exists: the sign-in's callback and sign-out target. */
  readonly consoleUrl: string;
  /**
   * Every user of the pool may review (decide approvals): the app client hands out the
   * `stepwise/approve` scope. Cognito grants a client's scopes to all its users, so leave this off
   * unless everyone you add to the pool is a reviewer.
   * @default false
   */
  readonly reviewers?: boolean;
  /**
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * A Cognito user pool for the console (docs/console.md, "Sign-in"): users are added by an
 * administrator (no self sign-up), sign in on Cognito's pages, and the console gets an access
 * token by authorization code with PKCE through a public app client (no secret). The API's JWT
 * authorizer takes those tokens (`apiAuth`).
 */
export class ConsoleUsers extends Construct {
  public readonly userPool: cognito.UserPool;
  public readonly client: cognito.UserPoolClient;
  public readonly domain: cognito.UserPoolDomain;
  private readonly reviewers: boolean;

  constructor(scope: Construct, id: string, props: ConsoleUsersProps) {
    super(scope, id);
    this.reviewers = props.reviewers ?? false;
    this.userPool = new cognito.UserPool(this, 'Pool', {
      selfSignUpEnabled: false,
      signInAliases: { username: true, email: true },
      autoVerify: { email: true },
      passwordPolicy: { minLength: 12, requireLowercase: true, requireUppercase: true, requireDigits: true, requireSymbols: true },
      mfa: cognito.Mfa.OPTIONAL,
      mfaSecondFactor: { sms: false, otp: true },
      accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    Validations.of(this.userPool).acknowledge({
      id: 'AwsSolutions-COG2',
      reason: 'MFA is offered (authenticator apps) and can be required in the pool’s settings; requiring it by default would block the first sign-in of users an administrator adds.',
    });
    Validations.of(this.userPool).acknowledge({
      id: 'AwsSolutions-COG8',
      reason: 'The Plus feature plan costs per monthly active user; the pool serves a team’s console, its users added by an administrator.',
    });
    Validations.of(this.userPool).acknowledge({
      id: 'AwsSolutions-COG3',
      reason: 'Threat protection needs the Plus feature plan (a cost per user); users are added by an administrator, not signed up.',
    });
    const stepwise = this.userPool.addResourceServer('Stepwise', {
      identifier: 'stepwise',
      scopes: [new cognito.ResourceServerScope({ scopeName: 'approve', scopeDescription: 'Decide approvals of tool calls' })],
    });
    this.domain = this.userPool.addDomain('Domain', { cognitoDomain: { domainPrefix: props.domainPrefix } });
    const scopes = [cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL, cognito.OAuthScope.PROFILE];
    if (this.reviewers) scopes.push(cognito.OAuthScope.custom('stepwise/approve'));
    this.client = this.userPool.addClient('Console', {
      generateSecret: false,
      authFlows: {},
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes,
        callbackUrls: [`${props.consoleUrl}callback`],
        logoutUrls: [props.consoleUrl],
      },
      preventUserExistenceErrors: true,
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.hours(12),
    });
    this.client.node.addDependency(stepwise);
  }

  /** The issuer of the pool's tokens. */
  get issuer(): string {
    const stack = Stack.of(this);
    return `https://cognito-idp.${stack.region}.${stack.urlSuffix}/${this.userPool.userPoolId}`;
  }

  /** The API's auth: JWTs of this pool, for the console's client. */
  apiAuth(): ApiAuth {
    return { type: 'jwt', issuer: this.issuer, audience: [this.client.userPoolClientId] };
  }

  /** The console's sign-in settings for this pool. */
  signIn(): ConsoleSignIn {
    const base = this.domain.baseUrl();
    return {
      type: 'oidc',
      issuer: this.issuer,
      clientId: this.client.userPoolClientId,
      scope: ['openid', 'email', 'profile', ...(this.reviewers ? ['stepwise/approve'] : [])].join(' '),
      authorizationEndpoint: `${base}/oauth2/authorize`,
      tokenEndpoint: `${base}/oauth2/token`,
      logoutEndpoint: `${base}/logout`,
      connectOrigins: [base],
    };
  }
}
