import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';
import { logicalIdOf, policiesWhere, stepwiseStack, statementsOf, withoutHash } from '../support/template.js';

const { template } = stepwiseStack();

describe('FrontDoor', () => {
  it('requires IAM authorization on every route of the HTTP API by default', () => {
    const routes = template.findResources('AWS::ApiGatewayV2::Route');
    expect(Object.values(routes).map((r) => (r as { Properties: { RouteKey: string } }).Properties.RouteKey).sort()).toEqual([
      'GET /.well-known/agent-card.json',
      'DELETE /mcp',
      'GET /agents',
      'GET /mcp',
      'GET /evals',
      'GET /memories',
      'GET /memories/{path+}',
      'DELETE /memories/{path+}',
      'GET /evals/{evalId}',
      'GET /openapi.json',
      'GET /runs',
      'GET /runs/{runId}',
      'GET /runs/{runId}/events/page',
      'GET /runs/{runId}/files',
      'GET /runs/{runId}/files/{path+}',
      'GET /runs/{runId}/messages',
      'POST /mcp',
      'POST /evals',
      'POST /runs',
      'POST /runs/{runId}/approvals/{toolUseId}',
      'POST /runs/{runId}/cancel',
      'POST /runs/{runId}/fork',
      'POST /schedules',
      'GET /schedules',
      'GET /schedules/{scheduleId}',
      'DELETE /schedules/{scheduleId}',
      'POST /schedules/{scheduleId}/pause',
      'POST /schedules/{scheduleId}/resume',
    ].sort());
    for (const route of Object.values(routes) as { Properties: Record<string, unknown> }[]) {
      expect(route.Properties.AuthorizationType).toBe('AWS_IAM');
    }
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { StageName: '$default', AccessLogSettings: Match.objectLike({}) });
  });

  it('can use a JWT authorizer instead, chosen in the props', () => {
    const { template: jwt } = synthesize(
      (app) => new StepwiseStack(app, 'Jwt', { auth: { type: 'jwt', issuer: 'https://issuer.example.com', audience: ['stepwise'] } }),
    );
    jwt.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      JwtConfiguration: { Issuer: 'https://issuer.example.com', Audience: ['stepwise'] },
    });
    for (const route of Object.values(jwt.findResources('AWS::ApiGatewayV2::Route')) as { Properties: Record<string, unknown> }[]) {
      expect(route.Properties.AuthorizationType).toBe('JWT');
    }
  });

  it('sends Stepwise Run Requested events from the bus to the intake, with a dead-letter queue', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: { Ref: logicalIdOf(template, 'Bus', 'AWS::Events::EventBus') },
      EventPattern: { 'detail-type': ['Stepwise Run Requested'] },
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalIdOf(template, 'FrontDoorIntakeFunction', 'AWS::Lambda::Function'), 'Arn'] },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalIdOf(template, 'FrontDoorDeadLetters', 'AWS::SQS::Queue'), 'Arn'] } },
          RetryPolicy: { MaximumRetryAttempts: 4, MaximumEventAgeInSeconds: 7200 },
        }),
      ],
    });
  });

  it('retries an intake invocation that threw twice, then records it in the same dead-letter queue', () => {
    const intake = logicalIdOf(template, 'FrontDoorIntakeFunction', 'AWS::Lambda::Function');
    const queue = logicalIdOf(template, 'FrontDoorDeadLetters', 'AWS::SQS::Queue');
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: intake },
      Qualifier: '$LATEST',
      MaximumRetryAttempts: 2,
      MaximumEventAgeInSeconds: 7200,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
    });
    const configs = Object.values(template.findResources('AWS::Lambda::EventInvokeConfig')) as { Properties: { FunctionName: unknown } }[];
    expect(configs.filter((c) => JSON.stringify(c.Properties.FunctionName) === JSON.stringify({ Ref: intake }))).toHaveLength(1);
    const sends = statementsOf(template, 'FrontDoorIntakeRole').filter((s) => [s.Action].flat().includes('sqs:SendMessage'));
    expect(sends.map((s) => s.Resource)).toContainEqual({ 'Fn::GetAtt': [queue, 'Arn'] });
  });

  it('lets the API start orchestrator and eval executions, and stop only orchestrator executions', () => {
    const orchestratorRef = { Ref: logicalIdOf(template, 'OrchestratorStateMachine', 'AWS::StepFunctions::StateMachine') };
    const evalsRef = { Ref: logicalIdOf(template, 'EvalsStateMachine', 'AWS::StepFunctions::StateMachine') };
    const states = statementsOf(template, 'FrontDoorApiRole').filter((s) => [s.Action].flat().some((a) => /^states:(Start|Stop)/.test(a)));
    expect(states.map((s) => s.Action).sort()).toEqual(['states:StartExecution', 'states:StartExecution', 'states:StopExecution']);
    expect(states.filter((s) => s.Action === 'states:StartExecution').map((s) => s.Resource)).toEqual([orchestratorRef, evalsRef]);
    expect(JSON.stringify(states.find((s) => s.Action === 'states:StopExecution')?.Resource)).toContain(':execution:');
  });

  it('lets only the API function answer the agent loop\'s task tokens', () => {
    const loopRef = { Ref: logicalIdOf(template, 'AgentLoop', 'AWS::StepFunctions::StateMachine') };
    expect(policiesWhere(template, (json) => /states:SendTask(Success|Failure)/.test(json))).toEqual(['FrontDoorApiRoleDefaultPolicy']);
    const grant = statementsOf(template, 'FrontDoorApiRole').find((st) => [st.Action].flat().includes('states:SendTaskSuccess'));
    expect([grant?.Action].flat()).toEqual(expect.arrayContaining(['states:SendTaskSuccess', 'states:SendTaskFailure']));
    expect(grant?.Resource).toEqual(loopRef);
  });

  it("lets the API write workspace objects (a fork's copies) and large goals, and read large conversation bodies without writing them", () => {
    const s3 = statementsOf(template, 'FrontDoorApiRole').filter((st) => [st.Action].flat().some((a) => a.startsWith('s3:')));
    const byPrefix = (action: string) =>
      s3.filter((st) => [st.Action].flat().includes(action)).flatMap((st) => JSON.stringify(st.Resource).match(/\/[a-z]+\/\*/g) ?? []).sort();
    // And an eval's suite and items (POST /evals), its report (GET /evals/{evalId}).
    expect(byPrefix('s3:PutObject')).toEqual(['/evals/*', '/runs/*', '/workspaces/*']);
    expect(byPrefix('s3:GetObject')).toEqual(['/conversations/*', '/evals/*', '/memories/*', '/runs/*', '/workspaces/*']);
    // And the caller's memory files (GET and DELETE /memories/{path}), never written by the API.
    expect(byPrefix('s3:DeleteObject')).toEqual(['/memories/*']);
    expect(s3.find((st) => st.Action === 's3:ListBucket')?.Condition).toEqual({ StringLike: { 's3:prefix': ['workspaces/*'] } });
  });

  describe('schedules on EventBridge Scheduler', () => {
    const schedulerRole = () => logicalIdOf(template, 'Schedules', 'AWS::IAM::Role');
    const groupId = () => logicalIdOf(template, 'SchedulesGroup', 'AWS::Scheduler::ScheduleGroup');
    const busArn = () => (template.findResources('AWS::Events::EventBus') as Record<string, unknown>) && { 'Fn::GetAtt': [logicalIdOf(template, 'Bus', 'AWS::Events::EventBus'), 'Arn'] };

    it('has one schedule group, and a role only the Scheduler of its account and group assumes, which may only put events on the bus', () => {
      template.resourceCountIs('AWS::Scheduler::ScheduleGroup', 1);
      const role = template.findResources('AWS::IAM::Role')[schedulerRole()] as { Properties: { AssumeRolePolicyDocument: { Statement: unknown[] }; Policies?: unknown; ManagedPolicyArns?: unknown } };
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        {
          Action: 'sts:AssumeRole',
          Effect: 'Allow',
          Principal: { Service: 'scheduler.amazonaws.com' },
          Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' }, 'aws:SourceArn': { 'Fn::GetAtt': [groupId(), 'Arn'] } } },
        },
      ]);
      expect({ inline: role.Properties.Policies, managed: role.Properties.ManagedPolicyArns }).toEqual({ inline: undefined, managed: undefined });
      expect(statementsOf(template, withoutHash(schedulerRole()))).toEqual([{ Action: 'events:PutEvents', Effect: 'Allow', Resource: busArn() }]);
    });

    it('lets only the Scheduler role put the schedules source on the bus, and the intake take onBehalfOf from it', () => {
      template.hasResourceProperties('AWS::Events::EventBusPolicy', {
        Statement: Match.objectLike({
          Effect: 'Deny',
          Action: 'events:PutEvents',
          Condition: { StringEquals: { 'events:source': 'stepwise.schedules' }, ArnNotEquals: { 'aws:PrincipalArn': [{ 'Fn::GetAtt': [schedulerRole(), 'Arn'] }] } },
        }),
      });
      const intake = Object.entries(template.findResources('AWS::Lambda::Function')).find(([id]) => id.startsWith('FrontDoorIntake'))?.[1] as { Properties: { Environment: { Variables: Record<string, unknown> } } };
      expect(intake.Properties.Environment.Variables.STEPWISE_TRUSTED_SOURCES).toBe('stepwise.schedules');
    });

    it("lets the API manage the group's schedules only, and pass the Scheduler role to the Scheduler only", () => {
      const grants = statementsOf(template, 'FrontDoorApiRole').filter((s) => [s.Action].flat().some((a) => a.startsWith('scheduler:') || a === 'iam:PassRole'));
      expect(grants.map((s) => s.Action)).toEqual([['scheduler:CreateSchedule', 'scheduler:GetSchedule', 'scheduler:UpdateSchedule', 'scheduler:DeleteSchedule'], 'iam:PassRole']);
      expect(JSON.stringify(grants[0]?.Resource)).toMatch(/:schedule\/[^"]*-schedules\/\*"/);
      expect(grants[1]).toMatchObject({ Resource: { 'Fn::GetAtt': [schedulerRole(), 'Arn'] }, Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } } });
      expect(policiesWhere(template, (json) => json.includes('scheduler:') || json.includes('iam:PassRole'))).toEqual(['FrontDoorApiRoleDefaultPolicy']);
    });
  });
});
