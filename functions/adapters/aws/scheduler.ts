/**
 * Schedules on EventBridge Scheduler (docs/schedules.md): one schedule per Stepwise schedule, in
 * the stack's group, named by its id. Its target puts a `Stepwise Run Requested` event on the
 * stack's bus as the schedules source, through a role that may do nothing else; the detail names
 * the schedule and its owner, whom only that source may name.
 */
import {
  CreateScheduleCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ResourceNotFoundException,
  type SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { firingEntry } from '../../core/schedules/fire.js';
import type { Schedule, ScheduleTrigger } from '../../core/schedules/types.js';

export interface SchedulerTarget {
  /** The schedule group of the stack. */
  group: string;
  /** The bus the run requests go to. */
  busArn: string;
  /** The role EventBridge Scheduler assumes to put them: `events:PutEvents` on that bus only. */
  roleArn: string;
}

export class EventBridgeSchedulerTrigger implements ScheduleTrigger {
  constructor(
    private readonly client: SchedulerClient,
    private readonly target: SchedulerTarget,
  ) {}

  async create(schedule: Schedule): Promise<void> {
    const entry = firingEntry(schedule);
    await this.client.send(
      new CreateScheduleCommand({
        Name: schedule.scheduleId,
        GroupName: this.target.group,
        Description: schedule.name.slice(0, 512),
        ScheduleExpression: schedule.schedule,
        ScheduleExpressionTimezone: schedule.timezone,
        State: 'ENABLED',
        // Each firing once, on time: the intake decides what an overlapping one does.
        FlexibleTimeWindow: { Mode: 'OFF' },
        Target: {
          Arn: this.target.busArn,
          RoleArn: this.target.roleArn,
          Input: entry.Detail,
          EventBridgeParameters: { Source: entry.Source, DetailType: entry.DetailType },
          RetryPolicy: { MaximumEventAgeInSeconds: 3600, MaximumRetryAttempts: 3 },
        },
        ClientToken: schedule.scheduleId,
      }),
    );
  }

  /** UpdateSchedule replaces the whole definition: what GetSchedule answers, with the new state. */
  async setState(schedule: Schedule): Promise<void> {
    const current = await this.client.send(new GetScheduleCommand({ Name: schedule.scheduleId, GroupName: this.target.group }));
    await this.client.send(
      new UpdateScheduleCommand({
        Name: schedule.scheduleId,
        GroupName: this.target.group,
        ScheduleExpression: current.ScheduleExpression,
        ScheduleExpressionTimezone: current.ScheduleExpressionTimezone,
        Description: current.Description,
        StartDate: current.StartDate,
        EndDate: current.EndDate,
        KmsKeyArn: current.KmsKeyArn,
        FlexibleTimeWindow: current.FlexibleTimeWindow,
        Target: current.Target,
        ActionAfterCompletion: current.ActionAfterCompletion,
        State: schedule.state === 'enabled' ? 'ENABLED' : 'DISABLED',
      }),
    );
  }

  async remove(schedule: Schedule): Promise<void> {
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: schedule.scheduleId, GroupName: this.target.group }));
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw error;
    }
  }
}
