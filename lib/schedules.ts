/**
 * Schedules on EventBridge Scheduler (docs/schedules.md): the stack's schedule group, and the role
 * the Scheduler assumes to fire them, which may only put events on the stack's bus. The bus lets
 * only that role put the schedules source (a trusted source, lib/trusted-sources.ts), and the
 * intake takes the owner a firing names from that source alone; only the API function may hand
 * the role to the Scheduler (`iam:PassRole`), for schedules of the group only.
 */
import { ArnFormat, Stack, Validations } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import { Construct } from 'constructs';
import { scheduleSource } from '../functions/core/schedules/types.js';
import type { TrustedSource } from './trusted-sources.js';

export interface SchedulesProps {
  /** The bus the firings' run requests go to. */
  readonly bus: events.IEventBus;
}

/** The schedule group and the Scheduler's role; `grantManage` gives the API function the rest. */
export class Schedules extends Construct {
  public readonly group: scheduler.CfnScheduleGroup;
  /** The role EventBridge Scheduler assumes: `events:PutEvents` on the bus, nothing else. */
  public readonly role: iam.Role;
  /** The schedules source, which only the role may put on the bus. */
  public readonly trustedSource: TrustedSource;
  private readonly bus: events.IEventBus;

  constructor(scope: Construct, id: string, props: SchedulesProps) {
    super(scope, id);
    this.bus = props.bus;
    // One group per stack, so the API's grants reach this stack's schedules only.
    this.group = new scheduler.CfnScheduleGroup(this, 'Group', { name: `${Stack.of(this).stackName}-schedules`.slice(0, 64) });
    const account = Stack.of(this).account;
    this.role = new iam.Role(this, 'Role', {
      description: 'EventBridge Scheduler puts the run requests of Stepwise schedules on the bus, and nothing else.',
      // Only the Scheduler of this account, for schedules of this group, may assume it (confused deputy).
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': account, 'aws:SourceArn': this.group.attrArn } },
      }),
    });
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['events:PutEvents'], resources: [props.bus.eventBusArn] }));
    this.trustedSource = { source: scheduleSource, principals: [this.role.roleArn] };
  }

  /** The ARNs of the group's schedules. */
  private scheduleArns(): string {
    return Stack.of(this).formatArn({ service: 'scheduler', resource: 'schedule', resourceName: `${this.group.name}/*`, arnFormat: ArnFormat.SLASH_RESOURCE_NAME });
  }

  /** Lets a function create, read, change and delete the group's schedules, handing them the role; tells it where they are. */
  grantManage(fn: lambda.Function): void {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['scheduler:CreateSchedule', 'scheduler:GetSchedule', 'scheduler:UpdateSchedule', 'scheduler:DeleteSchedule'],
        resources: [this.scheduleArns()],
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['iam:PassRole'],
        resources: [this.role.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );
    fn.addEnvironment('STEPWISE_SCHEDULE_GROUP', this.group.name ?? '');
    fn.addEnvironment('STEPWISE_SCHEDULER_ROLE_ARN', this.role.roleArn);
    fn.addEnvironment('STEPWISE_EVENT_BUS_ARN', this.bus.eventBusArn);
    Validations.of(fn.role ?? fn).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/${this.group.name ?? ''}/*]`,
      reason: "Schedules are named by id at run time; the grant covers the schedules of this stack's group only.",
    });
  }
}
