import { describe, expect, it } from 'vitest';
import { definitionOf, functionOf, functionsOf, logicalIdOf, policiesWhere, stepwiseStack, statementsOf } from '../support/template.js';

const { template } = stepwiseStack();

describe('StepwiseAgents', () => {
  it('lets tools reach workspaces only through the workspace role, which the tool function alone assumes', () => {
    const toolS3 = statementsOf(template, 'ToolRole').filter((st) => JSON.stringify(st.Action).includes('s3:'));
    expect(toolS3.flatMap((st) => JSON.stringify(st.Resource).match(/\/[a-z]+\/\*/g) ?? [])).toEqual(['/conversations/*']);
    const assume = statementsOf(template, 'ToolRole').find((st) => st.Action === 'sts:AssumeRole');
    const workspaceRoleId = logicalIdOf(template, 'WorkspaceRole', 'AWS::IAM::Role');
    expect(assume?.Resource).toEqual({ 'Fn::GetAtt': [workspaceRoleId, 'Arn'] });

    const ws = statementsOf(template, 'WorkspaceRoleDefaultPolicy');
    // Workspaces, and the memory scopes (docs/memory.md): each call narrows these to one prefix with a session policy.
    expect([...new Set(ws.flatMap((st) => [st.Action].flat()))].sort()).toEqual(['s3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
    expect(ws.flatMap((st) => JSON.stringify(st.Resource).match(/\/[a-z]+\/\*/g) ?? []).sort()).toEqual(['/memories/*', '/workspaces/*']);
    expect(ws.filter((st) => st.Action === 's3:ListBucket').map((st) => st.Condition)).toEqual([
      { StringLike: { 's3:prefix': ['workspaces/*'] } },
      { StringLike: { 's3:prefix': ['memories/*'] } },
    ]);
    expect(ws.filter((st) => [st.Action].flat().includes('s3:DeleteObject')).flatMap((st) => JSON.stringify(st.Resource).match(/\/[a-z]+\/\*/g) ?? [])).toEqual(['/memories/*']);
    const role = template.findResources('AWS::IAM::Role')[workspaceRoleId] as { Properties: { AssumeRolePolicyDocument: unknown } };
    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain(logicalIdOf(template, 'ToolRole', 'AWS::IAM::Role'));
    expect(policiesWhere(template, (json) => json.includes('sts:AssumeRole') && json.includes(workspaceRoleId))).toEqual(['ToolRoleDefaultPolicy']);
  });

  it('nests timeouts: one model call < the inference Lambda < its state, with no SDK retry deployed', () => {
    const inference = functionOf(template, 'inference');
    const modelMs = Number(inference.Properties.Environment.Variables.STEPWISE_MODEL_TIMEOUT_MS);
    expect(inference.Properties.Environment.Variables.STEPWISE_MODEL_MAX_RETRIES).toBe('0');
    const stateTimeout = (definitionOf(template, 'AgentLoop').States as Record<string, { TimeoutSeconds?: number }>).Inference?.TimeoutSeconds ?? 0;
    expect(modelMs / 1000).toBeLessThan(inference.Properties.Timeout);
    expect(inference.Properties.Timeout).toBeLessThan(stateTimeout);
  });

  it('keeps the Anthropic key in Secrets Manager, readable by the inference function only', () => {
    const secretId = logicalIdOf(template, 'AnthropicApiKey', 'AWS::SecretsManager::Secret');
    for (const fn of functionsOf(template)) {
      expect(Object.keys(fn.Properties.Environment?.Variables ?? {})).not.toContain('ANTHROPIC_API_KEY');
    }
    expect(functionOf(template, 'inference').Properties.Environment.Variables.ANTHROPIC_API_KEY_SECRET_ARN).toEqual({ Ref: secretId });
    expect(policiesWhere(template, (json) => json.includes('secretsmanager:GetSecretValue'))).toEqual(['InferenceRoleDefaultPolicy']);
    const read = statementsOf(template, 'InferenceRole').find((st) => [st.Action].flat().includes('secretsmanager:GetSecretValue'));
    expect(read?.Resource).toEqual({ Ref: secretId });
  });
});
