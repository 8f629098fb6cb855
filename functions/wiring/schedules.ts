/** Wiring of schedules in the API function: EventBridge Scheduler, when the stack names its group (docs/schedules.md). */
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import type { ScheduleTrigger } from '../core/schedules/types.js';
import { EventBridgeSchedulerTrigger } from '../adapters/aws/scheduler.js';
import { type Env, sdkAttempts } from './wire.js';

/** The trigger the stack configured: its schedule group, the Scheduler's role and the bus; none when the group is unset. */
export function schedulerTriggerOf(env: Env): { scheduleTrigger?: ScheduleTrigger } {
  const group = env.STEPWISE_SCHEDULE_GROUP;
  if (!group) return {};
  const roleArn = env.STEPWISE_SCHEDULER_ROLE_ARN;
  const busArn = env.STEPWISE_EVENT_BUS_ARN;
  if (!roleArn) throw new Error('Stepwise is misconfigured: STEPWISE_SCHEDULER_ROLE_ARN is not set (schedules need the role EventBridge Scheduler assumes).');
  if (!busArn) throw new Error('Stepwise is misconfigured: STEPWISE_EVENT_BUS_ARN is not set (schedules put run requests on it).');
  const client = new SchedulerClient({ region: env.AWS_REGION, maxAttempts: sdkAttempts });
  return { scheduleTrigger: new EventBridgeSchedulerTrigger(client, { group, roleArn, busArn }) };
}
