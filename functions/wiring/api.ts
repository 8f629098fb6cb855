/** Wiring of the HTTP API function: the intake's parts, the stores it reads, and task tokens. */
import type { ApiDeps } from '../api/app.js';
import { SfnTaskTokens } from '../adapters/aws/task-tokens.js';
import { type IntakeHooks, intakeWiring, sfnClient } from './intake.js';
import type { Wiring } from './wire.js';

/** The HTTP API's dependencies: one Step Functions client starts runs and answers task tokens. */
export function apiWiring(wiring: Wiring, hooks: IntakeHooks & Pick<ApiDeps, 'log'> = {}): ApiDeps {
  const sfn = sfnClient(wiring.env);
  return {
    ...intakeWiring(wiring, sfn, hooks),
    ...(hooks.log ? { log: hooks.log } : {}),
    conversations: wiring.conversations,
    workspaceFor: wiring.workspaceFor,
    approvals: wiring.approvals,
    tokens: new SfnTaskTokens(sfn),
  };
}
