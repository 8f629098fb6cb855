/** Callers and owners in the deployed stack: least privilege per function, reviewers' routes, run indexes. */
import { App } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { listedAttributes, runIndexes, runningAttribute } from '../../functions/adapters/dynamo/layout.js';
import { StepwiseStack } from '../../lib/stepwise-stack.js';
import { synthesize } from '../support/synth.js';
import { type Statement, definitionOf, logicalIdOf, stepwiseStack, statementsOf } from '../support/template.js';

const { template, violations } = stepwiseStack();

/** What a role may do in the table: per partition key prefix, the actions, apart for the table and its indexes. */
function dynamoAccess(prefix: string): Record<string, string[]> {
  const access: Record<string, Set<string>> = {};
  for (const statement of statementsOf(template, prefix)) {
    const actions = [statement.Action].flat().filter((a) => a.startsWith('dynamodb:'));
    if (!actions.length) continue;
    const families = leadingKeys(statement);
    const onIndex = JSON.stringify(statement.Resource).includes('/index/');
    for (const family of families) {
      const key = `${onIndex ? 'index ' : ''}${family}`;
      for (const action of actions) (access[key] ??= new Set()).add(action.replace('dynamodb:', ''));
    }
  }
  return Object.fromEntries(Object.entries(access).map(([key, actions]) => [key, [...actions].sort()]));
}

/** The partition key prefixes a statement is limited to; `(any item)` when it is not limited. */
function leadingKeys(statement: Statement): string[] {
  const condition = statement.Condition as { 'ForAllValues:StringLike'?: { 'dynamodb:LeadingKeys'?: string[] } } | undefined;
  return condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] ?? ['(any item)'];
}

describe('least privilege in DynamoDB', () => {
  it('limits each function to the item families it touches, with the actions it needs', () => {
    // Live text: whole items written while the model generates, never read or updated.
    // The steps read the version of an agent's definition a run recorded; the functions that start runs store it.
    expect(dynamoAccess('InferenceRole')).toEqual({
      'conv#*': ['GetItem', 'PutItem', 'Query'],
      'run#*': ['GetItem', 'PutItem', 'UpdateItem'],
      'live#*': ['PutItem'],
      'agent#*': ['GetItem'],
    });
    expect(dynamoAccess('ToolRole')).toEqual({
      'conv#*': ['GetItem', 'PutItem', 'Query'],
      'run#*': ['GetItem', 'UpdateItem'],
      'agent#*': ['GetItem'],
    });
    expect(dynamoAccess('ApprovalRole')).toEqual({
      'conv#*': ['GetItem', 'Query'],
      'run#*': ['GetItem', 'PutItem', 'UpdateItem'],
    });
    // The API reads transcripts and lists runs; the conversation items it writes are a fork's copy (conditional puts).
    // It serves no event stream deployed (the stream function does), but its pages of events read live text, never write it.
    // A listing reads its page's running runs' live cost from their records in one BatchGetItem.
    expect(dynamoAccess('FrontDoorApiRole')).toEqual({
      'conv#*': ['GetItem', 'PutItem', 'Query'],
      'live#*': ['Query'],
      'run#*': ['BatchGetItem', 'GetItem', 'PutItem', 'Query', 'UpdateItem'],
      'idem#*': ['GetItem', 'PutItem', 'UpdateItem'],
      'session#*': ['GetItem', 'PutItem', 'UpdateItem'],
      'agent#*': ['GetItem', 'PutItem'],
      'slot#*': ['Query', 'UpdateItem'],
      'schedule#*': ['DeleteItem', 'GetItem', 'PutItem', 'Query', 'UpdateItem'],
      'index owner#*': ['Query'],
      'index tenant#*': ['Query'],
      'index running#*': ['Query'],
      // Deployed evals: recorded, read, listed, and ended when their start fails.
      'eval#*': ['GetItem', 'PutItem', 'Query', 'UpdateItem'],
    });
    // The eval steps create case runs as the intake does, read what they did, and end the eval's record.
    expect(dynamoAccess('EvalsStepRole')).toMatchObject({ 'eval#*': ['GetItem', 'UpdateItem'], 'run#*': ['GetItem', 'PutItem', 'UpdateItem'], 'conv#*': ['GetItem', 'Query'] });
    // Marks a run whose execution ended outside its states, frees its session lock, and reads an
    // ended run's answers for its spans (docs/traces.md): nothing more.
    expect(dynamoAccess('ExecutionEndedFunctionRole')).toEqual({
      'run#*': ['GetItem', 'UpdateItem'],
      'session#*': ['UpdateItem'],
      'conv#*': ['GetItem', 'Query'],
    });
    // The event stream reads runs, their approvals, conversations and live text; POST /agui starts
    // a run as POST /runs does (the quota's slots too). It writes no conversation or live item, and lists no runs.
    expect(dynamoAccess('LiveStreamRole')).toEqual({
      'conv#*': ['GetItem', 'Query'],
      'live#*': ['Query'],
      'run#*': ['GetItem', 'PutItem', 'Query', 'UpdateItem'],
      'idem#*': ['GetItem', 'PutItem', 'UpdateItem'],
      'session#*': ['GetItem', 'PutItem', 'UpdateItem'],
      'agent#*': ['GetItem', 'PutItem'],
      'slot#*': ['Query', 'UpdateItem'],
      'stream#*': ['Query', 'UpdateItem'],
    });
    // A schedule's firing: the intake reads the schedule and records its run or the skip; it never creates or deletes one.
    expect(dynamoAccess('FrontDoorIntakeRole')).toEqual({
      'run#*': ['GetItem', 'PutItem', 'UpdateItem'],
      'idem#*': ['GetItem', 'PutItem', 'UpdateItem'],
      'session#*': ['GetItem', 'PutItem', 'UpdateItem'],
      'agent#*': ['GetItem', 'PutItem'],
      'slot#*': ['Query', 'UpdateItem'],
      'schedule#*': ['GetItem', 'UpdateItem'],
    });
  });

  it('queries the run indexes only where the index is named', () => {
    const indexStatements = statementsOf(template, 'FrontDoorApiRole').filter((s) => JSON.stringify(s.Resource).includes('/index/'));
    const indexes = JSON.stringify(indexStatements.map((s) => s.Resource));
    for (const index of Object.values(runIndexes)) expect(indexes).toContain(`/index/${index.name}`);
    expect(indexes).not.toContain('/index/*');
  });

  it('stays clean under cdk-nag', () => {
    expect(violations).toEqual([]);
  });
});

describe('run indexes', () => {
  it('lists runs by owner, by tenant, and the running ones by owner, newest first, with the listed attributes only', () => {
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      GlobalSecondaryIndexes: Object.values(runIndexes).map((index) => ({
        IndexName: index.name,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: 'HASH' },
          { AttributeName: index.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: listedAttributes },
      })),
    });
  });

  it('takes a finished run out of the running index in the orchestrator, as the functions do', () => {
    const states = definitionOf(template, 'Orchestrator').States as Record<string, { Parameters?: { UpdateExpression?: string } }>;
    for (const name of ['MarkComplete', 'MarkFailed']) {
      expect(states[name]?.Parameters?.UpdateExpression).toContain(`REMOVE currentAgent, ${runningAttribute}`);
    }
  });
});

describe('reviewers', () => {
  it('with IAM auth, gives callers and reviewers a managed policy each, deciding only in the reviewers\'', () => {
    const policies = Object.values(template.findResources('AWS::IAM::ManagedPolicy')) as { Properties: { Description: string; PolicyDocument: { Statement: Statement[] } } }[];
    const routesOf = (description: string) =>
      JSON.stringify(policies.find((p) => p.Properties.Description.includes(description))?.Properties.PolicyDocument.Statement);
    expect(routesOf('decide approvals')).toContain('/POST/runs/*/approvals/*');
    expect(routesOf('start, list, read, watch and cancel')).not.toContain('approvals');
    expect(routesOf('start, list, read, watch and cancel')).toContain('/GET/runs');
    // MCP's decide_approval is checked by the function alone (the approve role), as docs/mcp.md says.
    expect(routesOf('start, list, read, watch and cancel')).toContain('/POST/mcp');
  });

  it('with JWT auth, asks API Gateway for a reviewer scope on the approvals route only, tells the API the tenant claim, and lets only the named principals put a trusted source', () => {
    const { template: jwt } = synthesize(
      (app) =>
        new StepwiseStack(app, 'Jwt', {
          auth: { type: 'jwt', issuer: 'https://idp.example.com', audience: ['stepwise'], tenantClaim: 'custom:tenant' },
          callers: { separateReviewer: true, maxRunningRunsPerCaller: 3, trustedSources: [{ source: 'app.portal', principals: ['arn:aws:iam::111122223333:role/Portal', '444455556666'] }] },
        }),
    );
    const routes = Object.values(jwt.findResources('AWS::ApiGatewayV2::Route')) as { Properties: { RouteKey: string; AuthorizationScopes?: string[] } }[];
    const scoped = routes.filter((r) => r.Properties.AuthorizationScopes).map((r) => [r.Properties.RouteKey, r.Properties.AuthorizationScopes]);
    expect(scoped).toEqual([['POST /runs/{runId}/approvals/{toolUseId}', ['stepwise/approve', 'stepwise/admin']]]);
    expect(routes.every((r) => JSON.stringify(r.Properties).includes('JWT'))).toBe(true);
    jwt.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          STEPWISE_HANDLER: 'api',
          STEPWISE_AUTH: 'jwt',
          STEPWISE_TENANT_CLAIM: 'custom:tenant',
          STEPWISE_SEPARATE_REVIEWER: 'true',
          STEPWISE_MAX_RUNNING_RUNS: '3',
          STEPWISE_TRUSTED_SOURCES: 'app.portal,stepwise.schedules',
        }),
      },
    });
    expect(Object.keys(jwt.findResources('AWS::IAM::ManagedPolicy'))).toEqual([]);

    // The bus refuses the trusted source to everyone but the named role and account, whatever their IAM policies allow.
    const bus = { Ref: logicalIdOf(jwt, 'Bus', 'AWS::Events::EventBus') };
    expect(Object.values(jwt.findResources('AWS::Events::EventBusPolicy')).map((r) => (r as { Properties: unknown }).Properties)).toEqual([
      {
        EventBusName: bus,
        StatementId: 'StepwiseTrustedSource0',
        Statement: {
          Sid: 'StepwiseTrustedSource0',
          Effect: 'Deny',
          Principal: '*',
          Action: 'events:PutEvents',
          Resource: { 'Fn::GetAtt': [bus.Ref, 'Arn'] },
          Condition: {
            StringEquals: { 'events:source': 'app.portal' },
            ArnNotEquals: { 'aws:PrincipalArn': ['arn:aws:iam::111122223333:role/Portal'] },
            StringNotEquals: { 'aws:PrincipalAccount': ['444455556666'] },
          },
        },
      },
      // The stack's own: the schedules' source, put by the Scheduler's role alone (front-door.test.ts).
      expect.objectContaining({ StatementId: 'StepwiseTrustedSource1' }),
    ]);
    // The intake's rule takes onBehalfOf from that source only; the dead letters get the rest, with the reason.
    const patterns = rulesOn(jwt, bus);
    expect(patterns.RunRequested).toEqual({
      'detail-type': ['Stepwise Run Requested'],
      $or: [{ detail: { onBehalfOf: [{ exists: false }] } }, { source: ['app.portal', 'stepwise.schedules'] }],
    });
    expect(patterns.UntrustedOnBehalf).toEqual({
      'detail-type': ['Stepwise Run Requested'],
      detail: { onBehalfOf: [{ exists: true }] },
      source: [{ 'anything-but': ['app.portal', 'stepwise.schedules'] }],
    });
  });
});

/** The event patterns of the rules on a bus, by the rule's id in the front door. */
function rulesOn(stack: typeof template, bus: unknown): Record<string, unknown> {
  const rules = stack.findResources('AWS::Events::Rule') as Record<string, { Properties: { EventBusName?: unknown; EventPattern: unknown } }>;
  return Object.fromEntries(
    Object.entries(rules)
      .filter(([, rule]) => JSON.stringify(rule.Properties.EventBusName) === JSON.stringify(bus))
      .map(([id, rule]) => [id.replace(/^.*FrontDoor/, '').replace(/[0-9A-F]{8}$/, ''), rule.Properties.EventPattern]),
  );
}

describe('trusted event sources', () => {
  it("without any configured, only the schedules' source may name another owner (docs/schedules.md), and a run request from another that does goes to the dead letters", () => {
    const bus = { Ref: logicalIdOf(template, 'Bus', 'AWS::Events::EventBus') };
    // The bus's one statement is the schedules source's (front-door.test.ts holds who may put it).
    expect(Object.values(template.findResources('AWS::Events::EventBusPolicy')).map((p) => (p as { Properties: { StatementId: string } }).Properties.StatementId)).toEqual(['StepwiseTrustedSource0']);
    expect(rulesOn(template, bus)).toEqual({
      RunRequested: { 'detail-type': ['Stepwise Run Requested'], $or: [{ detail: { onBehalfOf: [{ exists: false }] } }, { source: ['stepwise.schedules'] }] },
      UntrustedOnBehalf: { 'detail-type': ['Stepwise Run Requested'], detail: { onBehalfOf: [{ exists: true }] }, source: [{ 'anything-but': ['stepwise.schedules'] }] },
      // Stepwise's own announcements of a run's end, to the function that sends the run's spans.
      ExecutionEndedRunEndedRule: { source: ['stepwise'], 'detail-type': ['Stepwise Run Succeeded', 'Stepwise Run Failed', 'Stepwise Run Cancelled'] },
    });
    const refused = template.findResources('AWS::Events::Rule')[logicalIdOf(template, 'FrontDoorUntrustedOnBehalf', 'AWS::Events::Rule')] as { Properties: { Targets: unknown } };
    expect(refused.Properties.Targets).toEqual([
      {
        Id: 'Target0',
        Arn: { 'Fn::GetAtt': [logicalIdOf(template, 'FrontDoorDeadLetters', 'AWS::SQS::Queue'), 'Arn'] },
        InputTransformer: {
          InputPathsMap: { source: '$.source', f2: '$' },
          InputTemplate: JSON.stringify({
            reason: 'Source <source> is not trusted to start runs on behalf of another caller.',
            issues: [{ path: 'detail.onBehalfOf', message: 'Source <source> is not trusted to start runs on behalf of another caller.' }],
            event: '<f2>',
          }).replace('"<f2>"', '<f2>'),
        },
      },
    ]);
  });

  it.each([
    ['a bare source name (the older form)', ['app.portal'], 'callers.trustedSources[0]: "app.portal" names no principal allowed to put it;'],
    ['no principals', [{ source: 'app.portal', principals: [] }], 'callers.trustedSources[0].principals: names no principal allowed to put it'],
    ['a principal that is neither an account nor an IAM ARN', [{ source: 'app.portal', principals: ['*'] }], 'callers.trustedSources[0].principals[0]: must be a 12-digit account id or an IAM role or user ARN'],
    ["Stepwise's own source", [{ source: 'stepwise', principals: ['111122223333'] }], 'callers.trustedSources[0].source: must be a source of your own'],
    ["the schedules' source, which the stack trusts for its Scheduler role alone", [{ source: 'stepwise.schedules', principals: ['111122223333'] }], 'callers.trustedSources[0].source: must be a source of your own'],
  ])('fails synth, in one line, for a trusted source with %s', (_case, trustedSources, message) => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    expect(() => new StepwiseStack(app, 'Open', { callers: { trustedSources: trustedSources as never } })).toThrow(message);
  });
});
