#!/usr/bin/env node
/**
 * An example of Stepwise as a library: StepwiseAgents inside a stack of your own, with the model,
 * a JWT authorizer for the API, one MCP server, one of your Lambda functions as a tool, an agent
 * of your own that uses them and an SNS topic for the alarms chosen here.
 * `npx cdk synth --app "npx tsx bin/example-app.ts"`
 */
import { pathToFileURL } from 'node:url';
import { App, CfnOutput, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { StepwiseAgents } from '../lib/index.js';

/** Your stack: your own resources, and Stepwise as one construct among them. */
export class ResearchAssistantStack extends Stack {
  public readonly agents: StepwiseAgents;

  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);

    // CloudWatch may publish to an encrypted topic only with a customer managed key it may use.
    const key = new kms.Key(this, 'AlarmsKey', { enableKeyRotation: true, description: 'Encrypts the Stepwise alarm topic.' });
    key.grant(new iam.ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    const alarms = new sns.Topic(this, 'Alarms', { masterKey: key, enforceSSL: true });

    // A function you already run (any language): it gets the validated input, its answer is the result.
    const wordCount = lambda.Function.fromFunctionName(this, 'WordCount', 'word-count');

    this.agents = new StepwiseAgents(this, 'Agents', {
      model: 'claude-sonnet-4-5',
      maxTokens: 16_000,
      // Its tools reach the agents as docs__<tool>, listed once at each run's start.
      mcpServers: [{ name: 'docs', url: 'https://mcp.example.com/mcp' }],
      tools: [
        {
          name: 'word_count',
          description: 'Counts the words of a text.',
          inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
          function: wordCount,
        },
      ],
      // Your own agent beside the built-ins, checked at synth: POST /runs { "agent": "researcher", "goal": "…" }.
      agents: [
        {
          name: 'researcher',
          description: 'Answers a question from the docs server, citing the pages it used.',
          instructions: 'Answer the question from the docs: search them, read the pages that fit, and cite each page you used. Say so when the docs do not answer it.',
          tools: ['docs__*', 'word_count', 'write_file'],
        },
      ],
      // Your users sign in with your identity provider; API Gateway checks their tokens.
      auth: { type: 'jwt', issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE', audience: ['research-assistant'] },
      alarmTopic: alarms,
    });

    new CfnOutput(this, 'ApiUrl', { value: this.agents.api.apiEndpoint });
    new CfnOutput(this, 'StreamUrl', { value: this.agents.streamUrl.url });
    new CfnOutput(this, 'EventBusName', { value: this.agents.bus.eventBusName });
    new CfnOutput(this, 'DashboardName', { value: this.agents.dashboard.dashboardName });
  }
}

/** The example app: one ResearchAssistant stack. */
export function exampleApp(app: App = new App()): App {
  new ResearchAssistantStack(app, 'ResearchAssistant');
  return app;
}

// Synthesized, with cdk-nag's AwsSolutionsChecks as in bin/app.ts, when run as the CDK app
// (a test imports it instead).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const app = exampleApp();
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  app.synth();
}
