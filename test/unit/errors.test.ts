import { describe, expect, it } from 'vitest';
import * as awsErrors from '../../functions/adapters/aws/errors.js';
import * as awsIntake from '../../functions/adapters/aws/intake.js';
import * as scripted from '../../functions/adapters/model/scripted.js';
import * as apiCallers from '../../functions/api/callers.js';
import * as apiErrors from '../../functions/api/errors.js';
import * as agents from '../../functions/core/agents/types.js';
import * as approvals from '../../functions/core/approvals/types.js';
import * as budgets from '../../functions/core/budgets/types.js';
import * as callers from '../../functions/core/callers/types.js';
import * as errors from '../../functions/core/errors/errors.js';
import { errorTable, transientErrorNames } from '../../functions/core/errors/table.js';
import * as events from '../../functions/core/runs/events.js';
import * as fork from '../../functions/core/fork/types.js';
import * as memory from '../../functions/core/memory/types.js';
import * as intake from '../../functions/core/intake/types.js';
import * as loop from '../../functions/core/steps/types.js';
import * as model from '../../functions/core/model/types.js';
import * as runs from '../../functions/core/runs/types.js';
import * as schedules from '../../functions/core/schedules/types.js';
import * as stepInput from '../../functions/core/steps/input.js';
import * as stream from '../../functions/core/stream/types.js';
import * as external from '../../functions/core/tools/external/types.js';
import * as workspace from '../../functions/core/workspace/types.js';

const modules = [agents, approvals, budgets, callers, errors, fork, memory, intake, loop, model, runs, schedules, stepInput, stream, external, workspace, awsErrors, awsIntake, scripted, apiCallers, apiErrors];

/** Every concrete class of the family the modules export, one instance each. */
function family(): errors.StepwiseError[] {
  return modules
    .flatMap((module) => Object.values(module))
    .filter((value): value is new (message: string) => errors.StepwiseError => typeof value === 'function' && value.prototype instanceof errors.StepwiseError)
    // The abstract base of infrastructure faults is never thrown itself.
    .filter((ErrorClass) => !Object.is(ErrorClass, errors.InfrastructureError))
    .map((ErrorClass) => new ErrorClass('m'))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}

describe('the error family', () => {
  it('gives every error the name the state machine and the API select on, its status, and says which are worth a retry', () => {
    expect(family().map((error) => ({ name: error.name, code: error.code, status: error.status, transient: error.transient }))).toEqual([
      { name: 'AgentConfigInvalid', code: 'AgentConfigInvalid', status: 500, transient: false },
      { name: 'AgentDefinitionMissing', code: 'AgentDefinitionMissing', status: 500, transient: false },
      { name: 'ApprovalAlreadyDecided', code: 'ApprovalAlreadyDecided', status: 409, transient: false },
      { name: 'ApprovalDecided', code: 'ApprovalDecided', status: 500, transient: false },
      { name: 'ApprovalNotFound', code: 'ApprovalNotFound', status: 404, transient: false },
      { name: 'ApprovalPolicyInvalid', code: 'ApprovalPolicyInvalid', status: 500, transient: false },
      { name: 'BudgetExceeded', code: 'BudgetExceeded', status: 429, transient: false },
      { name: 'ContextWindowExceeded', code: 'ContextWindowExceeded', status: 500, transient: false },
      { name: 'FileNotFound', code: 'FileNotFound', status: 404, transient: false },
      { name: 'FileTooLarge', code: 'FileTooLarge', status: 413, transient: false },
      { name: 'Forbidden', code: 'Forbidden', status: 403, transient: false },
      { name: 'ForkTooLarge', code: 'ForkTooLarge', status: 409, transient: false },
      { name: 'IdempotencyConflict', code: 'IdempotencyConflict', status: 409, transient: false },
      { name: 'InvalidCursor', code: 'InvalidCursor', status: 400, transient: false },
      { name: 'InvalidEditedInput', code: 'ValidationFailed', status: 400, transient: false },
      { name: 'InvalidFork', code: 'ValidationFailed', status: 400, transient: false },
      { name: 'InvalidJson', code: 'InvalidJson', status: 400, transient: false },
      { name: 'InvalidMemory', code: 'ValidationFailed', status: 400, transient: false },
      { name: 'InvalidPath', code: 'InvalidPath', status: 400, transient: false },
      { name: 'InvalidStepInput', code: 'InvalidStepInput', status: 500, transient: false },
      { name: 'IssuerUnavailable', code: 'IssuerUnavailable', status: 500, transient: false },
      { name: 'MaxIterationsExceeded', code: 'MaxIterationsExceeded', status: 500, transient: false },
      { name: 'MemoryNotFound', code: 'MemoryNotFound', status: 404, transient: false },
      { name: 'ModelAccessDenied', code: 'ModelAccessDenied', status: 403, transient: false },
      { name: 'ModelNotConfigured', code: 'ModelNotConfigured', status: 500, transient: false },
      { name: 'ModelOverloaded', code: 'ModelOverloaded', status: 500, transient: true },
      { name: 'ModelRefused', code: 'ModelRefused', status: 500, transient: false },
      { name: 'ModelRequestInvalid', code: 'ModelRequestInvalid', status: 500, transient: false },
      { name: 'ModelResponseEmpty', code: 'ModelResponseEmpty', status: 500, transient: true },
      { name: 'ModelThrottled', code: 'ModelThrottled', status: 500, transient: true },
      { name: 'ModelUnavailable', code: 'ModelUnavailable', status: 500, transient: true },
      { name: 'NotFound', code: 'NotFound', status: 404, transient: false },
      { name: 'NotImplemented', code: 'NotImplemented', status: 501, transient: false },
      { name: 'OrchestratorUnavailable', code: 'OrchestratorUnavailable', status: 500, transient: true },
      { name: 'PathRejected', code: 'PathRejected', status: 400, transient: false },
      { name: 'RunCancelled', code: 'RunCancelled', status: 409, transient: false },
      { name: 'RunIdTaken', code: 'RunNotFound', status: 404, transient: false },
      { name: 'RunNotFound', code: 'RunNotFound', status: 404, transient: false },
      { name: 'RunNotRunning', code: 'RunNotRunning', status: 409, transient: false },
      { name: 'ScheduleNotFound', code: 'ScheduleNotFound', status: 404, transient: false },
      { name: 'ScriptExhausted', code: 'ScriptExhausted', status: 500, transient: false },
      { name: 'SessionBusy', code: 'SessionBusy', status: 409, transient: false },
      { name: 'StepStateInvalid', code: 'StepStateInvalid', status: 500, transient: false },
      { name: 'StoreUnavailable', code: 'StoreUnavailable', status: 500, transient: true },
      { name: 'StoredDataInvalid', code: 'StoredDataInvalid', status: 500, transient: false },
      { name: 'TooManyRuns', code: 'TooManyRuns', status: 429, transient: false },
      { name: 'TooManySchedules', code: 'TooManySchedules', status: 429, transient: false },
      { name: 'TooManyStreams', code: 'TooManyStreams', status: 429, transient: false },
      { name: 'ToolUnavailable', code: 'ToolUnavailable', status: 500, transient: true },
      { name: 'Unauthenticated', code: 'Unauthenticated', status: 401, transient: false },
      { name: 'UnsupportedMediaType', code: 'UnsupportedMediaType', status: 400, transient: false },
      { name: 'ValidationFailed', code: 'ValidationFailed', status: 400, transient: false },
      { name: 'WorkspaceFailed', code: 'WorkspaceFailed', status: 500, transient: false },
      { name: 'WorkspaceRefused', code: 'WorkspaceRefused', status: 400, transient: false },
      { name: 'WorkspaceUnavailable', code: 'WorkspaceUnavailable', status: 500, transient: true },
      { name: 'WriteConflict', code: 'WriteConflict', status: 409, transient: false },
    ]);
  });

  it('has a class for every name in its table but those a run record or a state machine writes itself and the API\'s answer to the unexpected, and a fault below the agent is an infrastructure error', () => {
    const errorsOf = family();
    expect(Object.keys(errorTable).filter((name) => !errorsOf.some((error) => error.name === name))).toEqual([
      'NoPlanProduced',
      'NoAnswer',
      'RetriesExhausted',
      'StartFailed',
      'ExecutionAborted',
      'ExecutionTimedOut',
      'ExecutionFailed',
      'InternalError',
    ]);
    const infrastructure = errorsOf.filter((error) => error instanceof errors.InfrastructureError).map((error) => error.name);
    expect(infrastructure).toEqual(Object.entries(errorTable).filter(([, spec]) => 'infrastructure' in spec).map(([name]) => name).sort());
  });

  it('lists the transient names once each, sorted', () => {
    expect(transientErrorNames()).toEqual([
      'ModelOverloaded',
      'ModelResponseEmpty',
      'ModelThrottled',
      'ModelUnavailable',
      'OrchestratorUnavailable',
      'StoreUnavailable',
      'ToolUnavailable',
      'WorkspaceUnavailable',
    ]);
  });
});

describe('the events', () => {
  it('keep the source and detail types that consumers’ rules match', () => {
    const { eventSource, runSucceededDetailType, runFailedDetailType, runCancelledDetailType, approvalRequestedDetailType, runRequestedDetailType } = events;
    expect({ eventSource, runSucceededDetailType, runFailedDetailType, runCancelledDetailType, approvalRequestedDetailType, runRequestedDetailType }).toEqual({
      eventSource: 'stepwise',
      runSucceededDetailType: 'Stepwise Run Succeeded',
      runFailedDetailType: 'Stepwise Run Failed',
      runCancelledDetailType: 'Stepwise Run Cancelled',
      approvalRequestedDetailType: 'Stepwise Approval Requested',
      runRequestedDetailType: 'Stepwise Run Requested',
    });
  });
});
