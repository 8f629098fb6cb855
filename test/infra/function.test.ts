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

  it('sends traces to the X-Ray OTLP endpoint of its region, signed, and lets only the functions that send spans put them', () => {
    for (const fn of functionsOf(template)) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { 'Fn::Join': ['', ['https://xray.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, '/v1/traces']] },
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
        STEPWISE_OTLP_SIGV4: 'xray',
      });
    }
    const putters = ['InferenceRole', 'ToolRole', 'ExecutionEndedFunctionRole', 'ApprovalRole', 'FrontDoorApiRole', 'FrontDoorIntakeRole', 'LiveStreamRole'].filter((id) =>
      statementsOf(template, id).some((s) => [s.Action].flat().includes('xray:PutSpans')),
    );
    expect(putters).toEqual(['InferenceRole', 'ToolRole', 'ExecutionEndedFunctionRole']);
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
