import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { StepwiseAgents, type StepwiseAgentsProps } from './stepwise-agents.js';

export interface StepwiseStackProps extends StackProps, StepwiseAgentsProps {}

/** Stepwise in a stack of its own (`bin/app.ts`): one StepwiseAgents and its outputs. */
export class StepwiseStack extends Stack {
  public readonly agents: StepwiseAgents;

  constructor(scope: Construct, id: string, props: StepwiseStackProps = {}) {
    super(scope, id, props);
    // "Default" leaves no trace in the logical ids: a stack deployed before StepwiseAgents
    // existed keeps every resource (the table and bucket above all) instead of replacing it.
    this.agents = new StepwiseAgents(this, 'Default', props);
    new CfnOutput(this, 'ApiUrl', { value: this.agents.api.apiEndpoint });
    // Run events stream from here (GET /runs/{runId}/events, POST /agui): a Lambda function URL.
    new CfnOutput(this, 'StreamUrl', { value: this.agents.streamUrl.url });
    new CfnOutput(this, 'EventBusName', { value: this.agents.bus.eventBusName });
    new CfnOutput(this, 'DashboardName', { value: this.agents.dashboard.dashboardName });
    // IAM auth: attach these to the roles of callers (and of reviewers) of the API.
    const { callerPolicy, reviewerPolicy } = this.agents.frontDoor;
    if (callerPolicy) new CfnOutput(this, 'CallerPolicyArn', { value: callerPolicy.managedPolicyArn });
    if (reviewerPolicy) new CfnOutput(this, 'ReviewerPolicyArn', { value: reviewerPolicy.managedPolicyArn });
  }
}
