import { App, Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { exampleApp } from '../../bin/example-app.js';
import { StepwiseAgents } from '../../lib/index.js';
import { synthesize } from '../support/synth.js';

let template: Template;
let violations: string[];

beforeAll(() => {
  ({ template, violations } = synthesize((app) => exampleApp(app).node.findChild('ResearchAssistant') as Stack, { nag: true }));
}, 120_000);

describe('the example app (StepwiseAgents in a stack of your own)', () => {
  it('passes cdk-nag AwsSolutionsChecks', () => {
    expect(violations).toEqual([]);
  });

  it('builds all of Stepwise under the construct, beside the stack\'s own resources', () => {
    expect(Object.keys(template.findResources('AWS::Lambda::Function')).filter((id) => id.startsWith('Agents'))).toHaveLength(8);
    expect(Object.keys(template.findResources('AWS::StepFunctions::StateMachine')).every((id) => id.startsWith('Agents'))).toBe(true);
    template.resourceCountIs('AWS::StepFunctions::StateMachine', 3);
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasOutput('ApiUrl', {});
    template.hasOutput('StreamUrl', {});
    template.hasOutput('DashboardName', {});
  });

  it('uses the model, token limit and JWT authorizer it was given', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: { STEPWISE_HANDLER: 'inference', STEPWISE_MODEL: 'claude-sonnet-4-5', STEPWISE_MAX_TOKENS: '16000' } },
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      JwtConfiguration: { Audience: ['research-assistant'] },
    });
  });

  it('offers its MCP server and its Lambda tool, and lets only the tool function invoke that function', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as { Properties: { Environment: { Variables: Record<string, unknown> } } }[];
    const configured = functions.map((f) => f.Properties.Environment.Variables).filter((v) => v.STEPWISE_MCP_SERVERS !== undefined);
    expect(configured.map((v) => v.STEPWISE_HANDLER).sort()).toEqual(['inference', 'tool']);
    for (const v of configured) {
      expect(JSON.parse(String(v.STEPWISE_MCP_SERVERS))).toEqual([{ name: 'docs', url: 'https://mcp.example.com/mcp' }]);
      // The function's ARN is a token, so the variable is an Fn::Join around the tool's JSON.
      expect(JSON.stringify(v.STEPWISE_LAMBDA_TOOLS)).toMatch(/word_count.*Counts the words of a text\..*:function:word-count/);
    }
    const invokers = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([, p]) => JSON.stringify(p).includes('lambda:InvokeFunction') && JSON.stringify(p).includes(':function:word-count'))
      .map(([id]) => id);
    expect(invokers).toHaveLength(1);
    expect(invokers[0]).toMatch(/^AgentsToolRole/);
  });

  it('takes an agent of its own whose tools are the MCP server\'s and the Lambda tool\'s (synth checks them), and graphs it', () => {
    const dashboard = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]);
    expect(dashboard).toContain('\\"Stepwise\\",\\"Iterations\\",\\"agent\\",\\"researcher\\"');
  });

  it('sends every alarm to the stack\'s topic', () => {
    const topicId = Object.keys(template.findResources('AWS::SNS::Topic'))[0];
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as { Properties: { AlarmActions?: unknown } }[];
    expect(alarms).toHaveLength(31);
    for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
  });

  it('exposes what it created for the stack to build on', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const agents = new StepwiseAgents(new Stack(app, 'Mine'), 'Agents');
    expect(agents.functions.tool).toBe(agents.tool.function);
    expect(agents.stateMachines.orchestrator).toBe(agents.orchestrator.stateMachine);
    expect([agents.table, agents.bucket, agents.api, agents.bus, agents.dashboard].every(Boolean)).toBe(true);
    expect(agents.alarms).toHaveLength(31);
    expect(agents.functions.executionEnded).toBe(agents.executionEnded.function.function);
    expect(agents.functions.stream).toBe(agents.liveStream.function.function);
    expect(agents.streamUrl).toBe(agents.liveStream.url);
  });
});
