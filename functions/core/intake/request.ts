/**
 * What a run request may say: the body of `POST /runs` and the detail of a `Stepwise Run
 * Requested` event, with the deployment's models and tools applied.
 */
import * as z from 'zod';
import { approvalPolicy } from '../approvals/policy.js';
import { Budget } from '../budgets/types.js';
import { Owner } from '../callers/types.js';
import { OutputRequest } from '../output/answer.js';
import { noExternalTools } from '../tools/external/names.js';
import { defaultMaxIterations, maxGoalChars, type RunRequestRules } from './types.js';

const modelId = z.string().min(1).max(200);

/** `model`, limited to the models a deployment allows when it names them. */
function modelField(allowed?: readonly string[]) {
  if (!allowed) return modelId.optional();
  return modelId
    .refine((model) => allowed.includes(model), { message: `must be one of the models this deployment allows: ${allowed.join(', ')}` })
    .optional();
}

/** The fields of a run request, as `POST /runs` and the fork route validate them. */
export function runRequestFields({ allowedModels, externalToolNames }: RunRequestRules = {}) {
  return {
    goal: z.string().trim().min(1, 'must not be empty').max(maxGoalChars, `must be at most ${maxGoalChars} characters`),
    mode: z.enum(['single', 'multi']).default('multi'),
    sessionId: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_" or "-"')
      .optional(),
    maxIterations: z.number().int().min(1).max(200).default(defaultMaxIterations),
    model: modelField(allowedModels),
    // A policy may name the deployment's tools only: a name it does not have would leave calls ungated.
    approvals: approvalPolicy(externalToolNames ?? noExternalTools).optional(),
    budget: Budget.optional(),
    output: OutputRequest.optional(),
  };
}

const sessionsAreSingle = {
  check: (body: { sessionId?: string | undefined; mode: 'single' | 'multi' }) => !(body.sessionId && body.mode === 'multi'),
  params: { path: ['sessionId'], message: 'sessions continue single-mode conversations; use mode "single" with a sessionId' },
};

/** The body of `POST /runs`, with the deployment's list of models applied when it has one, and its tools. */
export function createRunBody(rules: RunRequestRules = {}) {
  return z.object(runRequestFields(rules)).strict().refine(sessionsAreSingle.check, sessionsAreSingle.params);
}

/** The body of `POST /runs`, any model allowed, the built-in tools only (the body's type). */
export const CreateRunBody = createRunBody();

export type CreateRunBody = z.infer<typeof CreateRunBody>;

/** Executions are named `<runId>-<agent>-<iteration>`; Step Functions allows 80 characters. */
export const ClientRunId = z.string().regex(/^[A-Za-z0-9_-]{1,56}$/, 'must be 1-56 letters, digits, "_" or "-"');

/** The detail of a `Stepwise Run Requested` event: the `POST /runs` body plus an optional client run id. */
export function runRequestedDetail(rules: RunRequestRules = {}) {
  return z
    .object({
      ...runRequestFields(rules),
      runId: ClientRunId.optional(),
      /** The caller a trusted source starts the run for; it then owns the run. */
      onBehalfOf: Owner.strict().optional(),
    })
    .strict()
    .refine(sessionsAreSingle.check, sessionsAreSingle.params);
}

export const RunRequestedDetail = runRequestedDetail();

export type RunRequestedDetail = z.infer<typeof RunRequestedDetail>;

export const runRequestedDetailType = 'Stepwise Run Requested';
