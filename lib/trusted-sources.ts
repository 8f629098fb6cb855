/**
 * Event sources trusted to start runs on behalf of another caller (`onBehalfOf`), enforced by AWS
 * rather than by the source string alone (docs/events.md, "Runs on behalf of others"): the bus
 * denies `events:PutEvents` of such a source to every principal the deployment does not name, and
 * the intake's rule takes `onBehalfOf` only from those sources.
 */
import { Token } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import * as z from 'zod';
import { runRequestedDetailType } from '../functions/core/intake/request.js';

/** An event source that may start runs on behalf of other callers, and who may put events with it. */
export interface TrustedSource {
  /** The events' `source`, e.g. `app.portal`. */
  readonly source: string;
  /**
   * Who may put events with this source on the bus: IAM role or user ARNs (a role's sessions are
   * its role), or account ids (every principal of that account). Anyone else's events of this
   * source are refused by the bus.
   */
  readonly principals: string[];
}

/** What the docs call the setting, in every message. */
const setting = 'callers.trustedSources';

const accountId = /^\d{12}$/;
const iamArn = /^arn:aws[a-z-]*:iam::\d{12}:(role|user)\/[\w+=,.@/-]+$/;

const Principal = z
  .string()
  .refine((p) => Token.isUnresolved(p) || accountId.test(p) || iamArn.test(p), 'must be a 12-digit account id or an IAM role or user ARN');

const TrustedSourceSchema = z
  .object({
    source: z
      .string()
      .min(1)
      .max(256)
      .refine((s) => s !== 'stepwise' && !s.startsWith('stepwise.') && !s.startsWith('aws.'), 'must be a source of your own (not stepwise, stepwise.*, aws.*)'),
    principals: z.array(Principal).min(1, 'names no principal allowed to put it'),
  })
  .strict();

/**
 * The trusted sources as the construct takes them, checked: a source without principals (or written
 * as a bare string, the older form) fails synth with one line, so a trusted source is never open to
 * everyone who may put events on the bus.
 */
export function checkedTrustedSources(value: unknown): TrustedSource[] {
  const entries: unknown[] = value === undefined ? [] : Array.isArray(value) ? value : [value];
  const sources = entries.map((entry, index) => {
    const at = `${setting}[${index}]`;
    if (typeof entry === 'string') {
      throw new Error(`${at}: "${entry}" names no principal allowed to put it; write { "source": "${entry}", "principals": ["<role ARN or account id>"] } (docs/events.md).`);
    }
    const parsed = TrustedSourceSchema.safeParse(entry);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = issue?.path.length ? `.${issue.path.join('.').replace(/\.(\d+)/g, '[$1]')}` : '';
      throw new Error(`${at}${path}: ${issue?.message ?? 'invalid'} (docs/events.md).`);
    }
    return parsed.data;
  });
  const names = sources.map((s) => s.source);
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice) throw new Error(`${setting}: "${twice}" is listed twice; list each source once with all its principals (docs/events.md).`);
  return sources;
}

/**
 * The bus's statements: one per trusted source, denying `events:PutEvents` of that source to every
 * principal not named. A deny in the bus's resource policy holds for principals of the bus's own
 * account too, whatever their IAM policies allow; statements are added by id, so a shared bus
 * (the account's `default`) keeps its other statements.
 */
export function enforceTrustedSources(scope: Construct, bus: events.IEventBus, sources: readonly TrustedSource[]): void {
  sources.forEach(({ source, principals }, index) => {
    const arns = principals.filter((p) => !accountId.test(p));
    const accounts = principals.filter((p) => accountId.test(p));
    const statementId = `StepwiseTrustedSource${index}`;
    const statement = new iam.PolicyStatement({
      sid: statementId,
      effect: iam.Effect.DENY,
      principals: [new iam.StarPrincipal()],
      actions: ['events:PutEvents'],
      resources: [bus.eventBusArn],
      conditions: {
        StringEquals: { 'events:source': source },
        // Denied unless the caller is one of the named principals (a role's sessions are the role) or in a named account.
        ...(arns.length ? { ArnNotEquals: { 'aws:PrincipalArn': arns } } : {}),
        ...(accounts.length ? { StringNotEquals: { 'aws:PrincipalAccount': accounts } } : {}),
      },
    });
    new events.CfnEventBusPolicy(scope, `TrustedSource${index}`, { eventBusName: bus.eventBusName, statementId, statement: statement.toJSON() as unknown });
  });
}

/** The intake's rule: run requests that name no other owner, from any source, or that do, from a trusted source. */
export function runRequestedPattern(sources: readonly TrustedSource[]): events.EventPattern {
  const own = { detail: { onBehalfOf: events.Match.doesNotExist() } };
  if (!sources.length) return { detailType: [runRequestedDetailType], ...own };
  // `$or` is EventBridge's; CDK passes the pattern's keys through as they are.
  const either = { $or: [own, { source: sources.map((s) => s.source) }] } as events.EventPattern;
  return { detailType: [runRequestedDetailType], ...either };
}

/**
 * The rest, run requests on behalf of another caller from a source that is not trusted, go to the
 * dead letters with the reason the intake would give: nothing dropped silently (invariant 10).
 */
export function refuseUntrustedOnBehalf(scope: Construct, bus: events.IEventBus, sources: readonly TrustedSource[], deadLetters: sqs.IQueue): events.Rule {
  const reason = `Source ${events.EventField.source} is not trusted to start runs on behalf of another caller.`;
  return new events.Rule(scope, 'UntrustedOnBehalf', {
    eventBus: bus,
    description: 'Stepwise Run Requested events on behalf of another caller from an untrusted source go to the dead letters.',
    eventPattern: {
      detailType: [runRequestedDetailType],
      detail: { onBehalfOf: events.Match.exists() },
      ...(sources.length ? { source: events.Match.anythingBut(...sources.map((s) => s.source)) } : {}),
    },
    targets: [
      new targets.SqsQueue(deadLetters, {
        message: events.RuleTargetInput.fromObject({ reason, issues: [{ path: 'detail.onBehalfOf', message: reason }], event: events.EventField.fromPath('$') }),
      }),
    ],
  });
}
