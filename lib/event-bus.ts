import { Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
import { eitherExistingOrProps, sameEnvironment } from './existing-resources.js';

/** What may be changed of the event bus the construct creates. */
export interface StepwiseEventBusProps {
  /**
   * The bus's name. Changing it on a deployed stack replaces the bus (and the rule on it).
   * @default `<stack name>-events`
   */
  readonly eventBusName?: string;
  /**
   * A customer managed key to encrypt events at rest; the bus's key policy lets EventBridge use it.
   * @default an AWS owned key
   */
  readonly kmsKey?: kms.IKey;
  /**
   * The bus's description.
   * @default none
   */
  readonly description?: string;
}

/** The project's event bus: one it creates, or your own. */
export interface EventBusSettings {
  /**
   * Your own bus instead of a new one, e.g. your team's (`EventBus.fromEventBusName`), or the
   * account's `default` bus. It must be in the stack's account and Region. Stepwise puts its run
   * completions and approval requests on it (source `stepwise`) and adds one rule to it: events
   * whose detail type is `Stepwise Run Requested` go to the intake function. The construct adds
   * resource policy statements to it only for trusted event sources (`callers.trustedSources`, by
   * statement id, beside the bus's others); with a customer managed key, its key policy must already
   * let EventBridge use it.
   * @default a new bus, `<stack name>-events`
   */
  readonly existingEventBusObj?: events.IEventBus;
  /**
   * Adjusts the bus the construct creates; not with `existingEventBusObj`.
   * @default {} (the defaults of each prop)
   */
  readonly eventBusProps?: StepwiseEventBusProps;
}

/** The bus the settings ask for: the existing one, or a new one under `scope` with the id `id`. Settings that cannot work throw. */
export function projectEventBus(scope: Construct, id: string, props: EventBusSettings): events.IEventBus {
  eitherExistingOrProps(['existingEventBusObj', props.existingEventBusObj], ['eventBusProps', props.eventBusProps]);
  if (props.existingEventBusObj) sameEnvironment(scope, 'existingEventBusObj', props.existingEventBusObj);
  if (props.eventBusProps?.eventBusName === 'default') {
    throw new Error("eventBusProps.eventBusName cannot be 'default': that bus exists in every account; pass it as existingEventBusObj (EventBus.fromEventBusName).");
  }
  if (props.existingEventBusObj) return props.existingEventBusObj;
  const adjust = props.eventBusProps ?? {};
  return new events.EventBus(scope, id, {
    eventBusName: adjust.eventBusName ?? `${Stack.of(scope).stackName}-events`,
    ...(adjust.kmsKey ? { kmsKey: adjust.kmsKey } : {}),
    ...(adjust.description ? { description: adjust.description } : {}),
  });
}
