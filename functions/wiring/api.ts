/** Wiring of the HTTP API function: the intake's parts, the stores it reads, task tokens and its callers. */
import type { ApiDeps } from '../api/app.js';
import { type Authenticate, iamCallers, jwtClaimCallers } from '../api/callers.js';
import { SfnTaskTokens } from '../adapters/aws/task-tokens.js';
import { presignedLinks } from '../adapters/s3/links.js';
import { type IntakeHooks, intakeWiring, sfnClient } from './intake.js';
import { type Env, type Wiring, awsClients } from './wire.js';

/** The HTTP API's dependencies: one Step Functions client starts runs and answers task tokens. */
export function apiWiring(wiring: Wiring, hooks: IntakeHooks & Partial<Pick<ApiDeps, 'log' | 'authenticate'>> = {}): ApiDeps {
  const sfn = sfnClient(wiring.env);
  return {
    ...intakeWiring(wiring, sfn, hooks),
    ...(hooks.log ? { log: hooks.log } : {}),
    authenticate: hooks.authenticate ?? deployedCallers(wiring.env),
    access: { separateReviewer: wiring.env.STEPWISE_SEPARATE_REVIEWER },
    conversations: wiring.conversations,
    workspaceFor: wiring.workspaceFor,
    fileLinks: presignedLinks(awsClients(wiring.env).s3, wiring.env.STEPWISE_BUCKET),
    approvals: wiring.approvals,
    tokens: new SfnTaskTokens(sfn),
    events: wiring.events,
    stream: { maxDurationMs: wiring.env.STEPWISE_STREAM_MAX_SECONDS * 1000 },
  };
}

/** Callers as API Gateway identified them: by IAM signature, or by the claims of a verified JWT. */
function deployedCallers(env: Env): Authenticate {
  if (env.STEPWISE_AUTH === 'jwt') return jwtClaimCallers(env.STEPWISE_TENANT_CLAIM ? { tenantClaim: env.STEPWISE_TENANT_CLAIM } : {});
  return iamCallers({ reviewerArns: env.STEPWISE_REVIEWER_ARNS, adminArns: env.STEPWISE_ADMIN_ARNS });
}
