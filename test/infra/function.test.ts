import { describe, expect, it } from 'vitest';
import { functionsOf, stepwiseStack, statementsOf, withoutHash } from '../support/template.js';

const { template } = stepwiseStack();

describe('StepwiseFunction', () => {
  it('runs every function on Node.js 22, ARM64, with tracing and its own log group', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions).map(withoutHash).sort()).toEqual([
      'ApprovalFunction',
      'EvalsStepFunction',
      'ExecutionEndedFunction',
      'FrontDoorApiFunction',
      'FrontDoorIntakeFunction',
      'InferenceFunction',
      'LiveStreamFunction',
      'ToolFunction',
    ]);
    for (const fn of functionsOf(template)) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON', LogGroup: expect.anything() },
      });
    }
  });

  it('gives no function a wildcard action or a managed policy', () => {
    for (const id of ['InferenceRole', 'ToolRole', 'ApprovalRole', 'WorkspaceRole', 'FrontDoorApiRole', 'FrontDoorIntakeRole', 'LiveStreamRole']) {
      for (const s of statementsOf(template, id)) for (const action of [s.Action].flat()) expect(action).not.toMatch(/\*/);
    }
    const roles = template.findResources('AWS::IAM::Role');
    for (const role of Object.values(roles) as { Properties: Record<string, unknown> }[]) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });
});
