import { App, CfnOutput, Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';
import { functionOf, functionsOf, statementsOf } from '../support/template.js';

const wordCountArn = 'arn:aws:lambda:us-east-1:123456789012:function:word-count';
const shoutArn = 'arn:aws:lambda:us-east-1:123456789012:function:shout';
let tools: Template;
let violations: string[];

beforeAll(() => {
  ({ template: tools, violations } = synthesize(
    (app) => {
      const elsewhere = new Stack(app, 'Elsewhere');
      return new StepwiseStack(app, 'Stepwise', {
        mcpServers: [{ name: 'docs', url: 'https://mcp.example.com/mcp', capabilities: ['untrusted'], toolCapabilities: { docs__post: ['egress'] } }],
        reviewEgressAfterUntrusted: false,
        tools: [
          {
            name: 'word_count',
            description: 'Counts words.',
            inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
            function: lambda.Function.fromFunctionArn(elsewhere, 'WordCount', wordCountArn),
          },
          {
            name: 'shout',
            description: 'Upper-cases.',
            inputSchema: { type: 'object' },
            function: lambda.Function.fromFunctionArn(elsewhere, 'Shout', shoutArn),
            agents: ['coder'],
            capabilities: [],
          },
        ],
        approvalTools: ['word_count', 'docs__search'],
      });
    },
    { nag: true },
  ));
}, 120_000);

/** An app whose Lambda code is not bundled: these stacks are only constructed. */
const unbundledApp = () => new App({ context: { 'aws:cdk:bundling-stacks': [] } });

describe('StepwiseStack with external tools', () => {
  it('lets the tool function invoke exactly the configured functions, and no other function invoke them', () => {
    const invokes = statementsOf(tools, 'ToolRole').filter((st) => [st.Action].flat().includes('lambda:InvokeFunction'));
    expect(invokes).toEqual([expect.objectContaining({ Action: 'lambda:InvokeFunction', Resource: [wordCountArn, shoutArn] })]);
    for (const prefix of ['InferenceRole', 'ApprovalRole', 'FrontDoor']) {
      expect(JSON.stringify(statementsOf(tools, prefix))).not.toContain('function:word-count');
    }
  });

  it('hands the configuration to the inference and tool functions, with the functions\' ARNs', () => {
    const withTools = functionsOf(tools)
      .map((f) => f.Properties.Environment.Variables)
      .filter((v) => v.STEPWISE_LAMBDA_TOOLS !== undefined);
    expect(withTools.map((v) => v.STEPWISE_HANDLER).sort()).toEqual(['inference', 'tool']);
    for (const variables of withTools) {
      expect(JSON.parse(String(variables.STEPWISE_MCP_SERVERS))).toEqual([
        { name: 'docs', url: 'https://mcp.example.com/mcp', capabilities: ['untrusted'], toolCapabilities: { docs__post: ['egress'] } },
      ]);
      expect(JSON.parse(String(variables.STEPWISE_LAMBDA_TOOLS))).toEqual([
        { name: 'word_count', description: 'Counts words.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, functionName: wordCountArn },
        { name: 'shout', description: 'Upper-cases.', inputSchema: { type: 'object' }, functionName: shoutArn, agents: ['coder'], capabilities: [] },
      ]);
    }
  });

  it('tells the inference function when the deployment turned off the review of egress after untrusted content, which it alone applies', () => {
    const turnedOff = functionsOf(tools).filter((f) => f.Properties.Environment.Variables.STEPWISE_REVIEW_EGRESS_AFTER_UNTRUSTED !== undefined);
    expect(turnedOff.map((f) => [f.Properties.Environment.Variables.STEPWISE_HANDLER, f.Properties.Environment.Variables.STEPWISE_REVIEW_EGRESS_AFTER_UNTRUSTED])).toEqual([['inference', 'false']]);
  });

  it('still passes cdk-nag AwsSolutionsChecks', () => {
    // "Elsewhere" only holds the imported functions (an empty template, which CloudFormation's own check notes).
    expect(violations.filter((v) => !v.endsWith(' Elsewhere'))).toEqual([]);
  });

  it('refuses at synth a schema Ajv cannot compile, and takes a draft-07 one and a server URL from elsewhere in the app', () => {
    const app = unbundledApp();
    const fns = new Stack(app, 'Fns');
    const fn = lambda.Function.fromFunctionArn(fns, 'Fn', wordCountArn);
    const badSchema = { type: 'object' as const, properties: { text: { type: 'nope' } } };
    expect(() => new StepwiseStack(app, 'Bad', { tools: [{ name: 'count', description: 'x', inputSchema: badSchema, function: fn }] })).toThrow(
      /inputSchema of tool "count" is not a valid JSON Schema/,
    );
    const draft7 = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' as const, properties: { text: { type: 'string' } } };
    const url = new CfnOutput(fns, 'McpUrl', { value: 'https://mcp.example.com/mcp' }).importValue;
    expect(
      () => new StepwiseStack(app, 'Good', { tools: [{ name: 'count', description: 'x', inputSchema: draft7, function: fn }], mcpServers: [{ name: 'docs', url }] }),
    ).not.toThrow();
  });

  it('refuses at synth a tool named like a built-in, and a server name with the separator', () => {
    const fn = (app: App) => lambda.Function.fromFunctionArn(new Stack(app, 'Fns'), 'Fn', wordCountArn);
    const app = unbundledApp();
    expect(
      () => new StepwiseStack(app, 'A', { tools: [{ name: 'read_file', description: 'x', inputSchema: { type: 'object' }, function: fn(app) }] }),
    ).toThrow(/tools\.0\.name: "read_file" is a built-in tool's name|lambdaTools\.0\.name: "read_file" is a built-in tool's name/);
    expect(() => new StepwiseStack(unbundledApp(), 'B', { mcpServers: [{ name: 'my__docs', url: 'https://x/mcp' }] })).toThrow(/mcpServers\.0\.name/);
  });
});

describe('StepwiseStack gating external tools', () => {
  it('tells the API, intake and stream functions the tools\' names, and nothing else of them: they gate calls, they never make one', () => {
    for (const handler of ['api', 'run-requested', 'stream']) {
      const variables = functionOf(tools, handler).Properties.Environment.Variables;
      expect(variables).toMatchObject({
        STEPWISE_APPROVAL_TOOLS: 'word_count,docs__search',
        STEPWISE_MCP_SERVER_NAMES: 'docs',
        STEPWISE_LAMBDA_TOOL_NAMES: 'word_count,shout',
      });
      expect(variables.STEPWISE_MCP_SERVERS).toBeUndefined();
      expect(variables.STEPWISE_LAMBDA_TOOLS).toBeUndefined();
    }
    for (const handler of ['inference', 'tool', 'approval']) {
      const variables = functionOf(tools, handler).Properties.Environment.Variables;
      expect(variables.STEPWISE_MCP_SERVER_NAMES).toBeUndefined();
      expect(variables.STEPWISE_LAMBDA_TOOL_NAMES).toBeUndefined();
    }
  });

  it('refuses at synth approvalTools naming a tool the deployment does not have, rather than deploy it ungated', () => {
    const known = 'calculator, read_file, write_file, list_files, edit_file, finish_plan, docs__<tool>, word_count (and <server>__* for every tool of a server)';
    // A server that is not configured, a Lambda tool that is not, a server's name with no tool, a name the model cannot call.
    for (const name of ['nosuch__x', 'shout', 'docs__', 'docs__a.b', 'docs']) {
      const app = unbundledApp();
      const elsewhere = new Stack(app, 'Elsewhere');
      expect(
        () =>
          new StepwiseStack(app, 'Gated', {
            mcpServers: [{ name: 'docs', url: 'https://mcp.example.com/mcp' }],
            tools: [{ name: 'word_count', description: 'Counts words.', inputSchema: { type: 'object' }, function: lambda.Function.fromFunctionArn(elsewhere, 'WordCount', wordCountArn) }],
            approvalTools: ['word_count', name],
          }),
      ).toThrow(`approvalTools names unknown tools: ${name} (known: ${known}).`);
    }
  });
});
