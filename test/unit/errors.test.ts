import { describe, expect, it } from 'vitest';
import * as approvals from '../../functions/core/approvals/types.js';
import * as callers from '../../functions/core/callers/types.js';
import * as errors from '../../functions/core/errors/errors.js';
import * as events from '../../functions/core/runs/events.js';
import * as fork from '../../functions/core/fork/types.js';
import * as intake from '../../functions/core/intake/types.js';
import * as loop from '../../functions/core/steps/errors.js';
import * as model from '../../functions/core/model/types.js';
import * as runs from '../../functions/core/runs/types.js';
import * as stepInput from '../../functions/core/steps/input.js';
import * as external from '../../functions/core/tools/external/types.js';
import * as workspace from '../../functions/core/workspace/types.js';

const modules = [approvals, callers, errors, fork, intake, loop, model, runs, stepInput, external, workspace];

describe('the error family', () => {
  it('gives every error the name the state machine and the API select on, and says which are worth a retry', () => {
    const family = modules
      .flatMap((module) => Object.values(module))
      .filter((value): value is new (message: string) => errors.StepwiseError => typeof value === 'function' && value.prototype instanceof errors.StepwiseError)
      // The abstract base of infrastructure faults is never thrown itself.
      .filter((ErrorClass) => !Object.is(ErrorClass, errors.InfrastructureError))
      .map((ErrorClass) => new ErrorClass('m'))
      .map((error) => ({ name: error.name, transient: error.transient }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    expect(family).toEqual([
      { name: 'ApprovalAlreadyDecided', transient: false },
      { name: 'ApprovalDecided', transient: false },
      { name: 'ApprovalNotFound', transient: false },
      { name: 'ApprovalPolicyInvalid', transient: false },
      { name: 'ContextWindowExceeded', transient: false },
      { name: 'FileTooLarge', transient: false },
      { name: 'Forbidden', transient: false },
      { name: 'ForkTooLarge', transient: false },
      { name: 'IdempotencyConflict', transient: false },
      { name: 'InvalidCursor', transient: false },
      { name: 'InvalidEditedInput', transient: false },
      { name: 'InvalidFork', transient: false },
      { name: 'InvalidStepInput', transient: false },
      { name: 'MaxIterationsExceeded', transient: false },
      { name: 'ModelAccessDenied', transient: false },
      { name: 'ModelNotConfigured', transient: false },
      { name: 'ModelOverloaded', transient: true },
      { name: 'ModelRefused', transient: false },
      { name: 'ModelRequestInvalid', transient: false },
      { name: 'ModelResponseEmpty', transient: true },
      { name: 'ModelThrottled', transient: true },
      { name: 'ModelUnavailable', transient: true },
      { name: 'NotFound', transient: false },
      { name: 'PathRejected', transient: false },
      { name: 'RunIdTaken', transient: false },
      { name: 'RunNotRunning', transient: false },
      { name: 'SessionBusy', transient: false },
      { name: 'StepStateInvalid', transient: false },
      { name: 'StoredDataInvalid', transient: false },
      { name: 'TooManyRuns', transient: false },
      { name: 'ToolUnavailable', transient: true },
      { name: 'Unauthenticated', transient: false },
      { name: 'WorkspaceFailed', transient: false },
      { name: 'WorkspaceRefused', transient: false },
      { name: 'WorkspaceUnavailable', transient: true },
      { name: 'WriteConflict', transient: false },
    ]);
  });

  it('lists the transient names once each, sorted, however many modules export them', () => {
    expect(errors.transientErrorNames(model, workspace, external, model)).toEqual([
      'ModelOverloaded',
      'ModelResponseEmpty',
      'ModelThrottled',
      'ModelUnavailable',
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
