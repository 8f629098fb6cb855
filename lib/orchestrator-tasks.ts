/**
 * The orchestrator's service-integration tasks with the grants narrowed to what it uses: CDK's
 * tasks grant a DynamoDB action on every item of the table and Describe/Stop on executions of any
 * state machine whose name starts with the agent loop's.
 */
import { ArnFormat, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';
import { leadingKeys } from './storage.js';

/**
 * The orchestrator's DynamoDB tasks touch run records only (`run#<runId>`, sk `run`): their grants
 * carry the run family's `dynamodb:LeadingKeys` condition (docs/callers-and-security.md, "Least
 * privilege"), as every function's do, instead of the task's default of any item of the table.
 */
export class RunRecordUpdate extends tasks.DynamoUpdateItem {
  constructor(scope: Construct, id: string, props: tasks.DynamoUpdateItemProps) {
    super(scope, id, props);
    for (const statement of this.taskPolicies ?? []) statement.addConditions(leadingKeys(['runs']));
  }
}

/** A read of a run record, granted on run records only (see `RunRecordUpdate`). */
export class RunRecordGet extends tasks.DynamoGetItem {
  constructor(scope: Construct, id: string, props: tasks.DynamoGetItemProps) {
    super(scope, id, props);
    for (const statement of this.taskPolicies ?? []) statement.addConditions(leadingKeys(['runs']));
  }
}

/**
 * A nested execution of the agent loop whose Describe/Stop grant names that state machine's
 * executions exactly (`execution:<name>:*`): the task's default, `execution:<name>*`, also
 * matches the executions of any look-alike state machine (`<name>-v2`).
 */
export class NestedLoop extends tasks.StepFunctionsStartExecution {
  constructor(scope: Construct, id: string, props: tasks.StepFunctionsStartExecutionProps) {
    super(scope, id, props);
    const stack = Stack.of(this);
    const name = stack.splitArn(props.stateMachine.stateMachineRef.stateMachineArn, ArnFormat.COLON_RESOURCE_NAME).resourceName;
    const executions = stack.formatArn({ service: 'states', resource: 'execution', arnFormat: ArnFormat.COLON_RESOURCE_NAME, resourceName: `${name}:*` });
    const policies = this.taskPolicies ?? [];
    const index = policies.findIndex((statement) => statement.actions.includes('states:DescribeExecution'));
    if (index < 0) throw new Error('NestedLoop: the task granted no DescribeExecution to narrow; aws-cdk-lib changed how it grants.');
    policies[index] = new iam.PolicyStatement({ actions: ['states:DescribeExecution', 'states:StopExecution'], resources: [executions] });
  }
}
