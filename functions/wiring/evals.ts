/** Wiring of deployed evals: their records, documents and starter (API function), and the eval steps' dependencies (eval-step function). */
import { randomUUID } from 'node:crypto';
import type { CaseStepDeps } from '../core/evals/case-steps.js';
import type { StartEvalDeps } from '../core/evals/deployed.js';
import { SfnEvalStarter } from '../adapters/aws/eval-starter.js';
import { Documents } from '../adapters/dynamo/documents.js';
import { DynamoEvalStore } from '../adapters/dynamo/evals.js';
import { S3EvalObjects } from '../adapters/s3/eval-objects.js';
import { intakeWiring, sfnClient } from './intake.js';
import { type Wiring, awsClients } from './wire.js';

/** What `/evals` needs: none when the deployment has no evals state machine (the routes then answer 501). */
export function evalRouteWiring(wiring: Wiring): StartEvalDeps | undefined {
  const arn = wiring.env.STEPWISE_EVALS_ARN;
  if (!arn) return undefined;
  const { dynamo, s3 } = awsClients(wiring.env);
  return {
    evals: new DynamoEvalStore(new Documents(dynamo), wiring.env.STEPWISE_TABLE),
    objects: new S3EvalObjects(s3, wiring.env.STEPWISE_BUCKET),
    starter: new SfnEvalStarter(sfnClient(wiring.env), arn),
    newId: randomUUID,
  };
}

/** The eval steps' dependencies: intake as `POST /runs` has it (its starter unused), the stores a case is judged from. */
export function evalStepWiring(wiring: Wiring): CaseStepDeps {
  const { dynamo, s3 } = awsClients(wiring.env);
  return {
    objects: new S3EvalObjects(s3, wiring.env.STEPWISE_BUCKET),
    evals: new DynamoEvalStore(new Documents(dynamo), wiring.env.STEPWISE_TABLE),
    runs: wiring.runs,
    conversations: wiring.conversations,
    workspaceFor: wiring.workspaceFor,
    intake: { ...intakeWiring(wiring), workspaceFor: wiring.workspaceFor },
  };
}
