/** Wiring of the intake (API and event functions): the orchestrator's starter and dead letters. */
import { randomUUID } from 'node:crypto';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { AgentCatalog } from '../core/definitions/catalog.js';
import type { DeadLetters, IntakeDeps } from '../core/intake/types.js';
import type { Run } from '../core/runs/types.js';
import { SfnRunStarter, SqsDeadLetters } from '../adapters/aws/intake.js';
import { agentCatalogOf } from './agents.js';
import { type Env, type Wiring, externalToolNamesOf, localCredentials, sdkAttempts } from './wire.js';

/** The Step Functions client: the local endpoint when one is set. */
export function sfnClient(env: Env): SFNClient {
  const local = env.STEPWISE_SFN_ENDPOINT;
  return new SFNClient({
    region: env.AWS_REGION,
    maxAttempts: sdkAttempts,
    ...(local ? { endpoint: local, credentials: localCredentials } : {}),
  });
}

/** What the intake reports besides its answer: the function's metrics, when deployed. */
export interface IntakeHooks {
  /** A run was created (once per run, however often it is requested). */
  onCreated?: (run: Run) => void;
}

/** The intake's dependencies: run creation and the orchestrator's starter; the catalog as the API lists it too. */
export function intakeWiring(wiring: Wiring, sfn: SFNClient = sfnClient(wiring.env), hooks: IntakeHooks = {}): IntakeDeps & { agents: AgentCatalog } {
  const arn = wiring.env.STEPWISE_ORCHESTRATOR_ARN;
  if (!arn) throw new Error('Stepwise is misconfigured: STEPWISE_ORCHESTRATOR_ARN is not set.');
  return {
    runs: wiring.runs,
    starter: new SfnRunStarter(sfn, arn),
    newId: randomUUID,
    idempotency: wiring.idempotency,
    sessions: wiring.sessions,
    slots: wiring.slots,
    approvalTools: wiring.env.STEPWISE_APPROVAL_TOOLS,
    agents: agentCatalogOf(wiring.env),
    agentStore: wiring.agentStore,
    externalToolNames: externalToolNamesOf(wiring.env),
    trustedSources: wiring.env.STEPWISE_TRUSTED_SOURCES,
    schedules: wiring.schedules,
    budgets: wiring.budgets,
    spend: wiring.spend,
    ...(hooks.onCreated ? { onCreated: hooks.onCreated } : {}),
    ...(wiring.tracing ? { tracing: true } : {}),
    ...(wiring.env.STEPWISE_MAX_RUNNING_RUNS ? { maxRunningRuns: wiring.env.STEPWISE_MAX_RUNNING_RUNS } : {}),
    ...(wiring.env.STEPWISE_ALLOWED_MODELS ? { allowedModels: wiring.env.STEPWISE_ALLOWED_MODELS } : {}),
  };
}

/** The dead letters of the event intake. */
export function deadLettersFrom(env: Env): DeadLetters {
  if (!env.STEPWISE_DEAD_LETTER_URL) throw new Error('Stepwise is misconfigured: STEPWISE_DEAD_LETTER_URL is not set.');
  return new SqsDeadLetters(new SQSClient({ region: env.AWS_REGION, maxAttempts: sdkAttempts }), env.STEPWISE_DEAD_LETTER_URL);
}
