import { describe, expect, it } from 'vitest';
import { itemFamilies } from '../../functions/adapters/dynamo/layout.js';
import { type DataAccess, dataAccessOf, everything } from '../support/data-access.js';
import { stepwiseStack, withoutHash } from '../support/template.js';

const { template } = stepwiseStack();

/** A family's name from its key prefix (`run#` → `runs`); an unknown prefix stays itself. */
const familyOf = (prefix: string) => Object.entries(itemFamilies).find(([, p]) => p === prefix)?.[0] ?? prefix;

/**
 * What each role is meant to reach (docs/callers-and-security.md, "Least privilege"): item
 * families of the table, key prefixes of the bucket. A role not listed may reach no data at all.
 */
const meant: Record<string, { items?: string[]; objects?: string[] }> = {
  InferenceRole: { items: ['conversations', 'runs', 'live', 'agents', 'spend'], objects: ['conversations/', 'runs/'] },
  ToolRole: { items: ['conversations', 'runs', 'agents'], objects: ['conversations/'] },
  WorkspaceRole: { objects: ['workspaces/', 'memories/'] },
  ApprovalRole: { items: ['conversations', 'runs'], objects: ['conversations/'] },
  OrchestratorStateMachineRole: { items: ['runs'] },
  FrontDoorApiRole: {
    items: ['runs', 'idempotency', 'sessions', 'running', 'slots', 'agents', 'conversations', 'live', 'byOwner', 'byTenant', 'spend', 'schedules', 'evals'],
    objects: ['runs/', 'conversations/', 'workspaces/', 'memories/', 'evals/'],
  },
  // Deployed evals: the steps create case runs as the intake does, read what they did, keep the eval's documents and end its record.
  EvalsStepRole: { items: ['runs', 'idempotency', 'sessions', 'slots', 'agents', 'conversations', 'evals'], objects: ['runs/', 'conversations/', 'workspaces/', 'evals/'] },
  // The Distributed Map reads its items (evals/<evalId>/cases.json).
  EvalsStateMachineRole: { objects: ['evals/*/cases.json'] },
  FrontDoorIntakeRole: { items: ['runs', 'idempotency', 'sessions', 'running', 'slots', 'agents', 'spend', 'schedules'], objects: ['runs/'] },
  // The stream function starts runs for POST /agui (a running-runs slot) and holds a slot per open stream.
  LiveStreamRole: { items: ['runs', 'conversations', 'live', 'idempotency', 'sessions', 'running', 'slots', 'streams', 'agents', 'spend'], objects: ['conversations/', 'runs/'] },
  // It reads an ended run's answers (their timings) for the run's spans (docs/traces.md).
  ExecutionEndedFunctionRole: { items: ['runs', 'sessions', 'conversations'], objects: ['runs/', 'conversations/'] },
};

/** Each data access a role has beyond what it is meant to reach, one line each. */
function beyondMeant(access: Map<string, DataAccess>, allowed: typeof meant): string[] {
  const findings: string[] = [];
  for (const [id, { items, objects }] of access) {
    const role = withoutHash(id);
    for (const [table, families] of items) {
      for (const family of families) {
        if (table === everything || family === everything || !allowed[role]?.items?.includes(family)) {
          findings.push(`${role}: items of ${table === everything ? 'any table' : table} in ${family === everything ? 'every family (no dynamodb:LeadingKeys)' : family}`);
        }
      }
    }
    for (const [bucket, prefixes] of objects) {
      for (const prefix of prefixes) {
        if (bucket === everything || prefix === everything || !allowed[role]?.objects?.includes(prefix)) {
          findings.push(`${role}: objects of ${bucket === everything ? 'any bucket' : bucket} under ${prefix === everything ? 'every prefix' : prefix}`);
        }
      }
    }
  }
  return findings;
}

describe('data access of every role', () => {
  it('reaches no DynamoDB item family and no S3 prefix beyond what the role is meant to', () => {
    const access = dataAccessOf(template.toJSON() as Parameters<typeof dataAccessOf>[0], familyOf);
    expect(beyondMeant(access, meant)).toEqual([]);
    // The evaluator saw the roles that hold data grants, so an empty answer means something.
    expect([...access.keys()].map(withoutHash).sort()).toEqual(
      ['ApprovalRole', 'EvalsStateMachineRole', 'EvalsStepRole', 'ExecutionEndedFunctionRole', 'FrontDoorApiRole', 'FrontDoorIntakeRole', 'InferenceRole', 'LiveStreamRole', 'OrchestratorStateMachineRole', 'ToolRole', 'WorkspaceRole'],
    );
  });

  it('fires on a role whose DynamoDB grant has no LeadingKeys condition, one with a Scan, and one with a whole bucket', () => {
    const table = { 'Fn::GetAtt': ['Table', 'Arn'] };
    const bucket = { 'Fn::GetAtt': ['Bucket', 'Arn'] };
    const fixture = {
      Resources: {
        Table: { Type: 'AWS::DynamoDB::GlobalTable' },
        Bucket: { Type: 'AWS::S3::Bucket' },
        OpenRole: { Type: 'AWS::IAM::Role' },
        ScanRole: { Type: 'AWS::IAM::Role', Properties: { Policies: [{ PolicyDocument: { Statement: [
          { Effect: 'Allow', Action: ['dynamodb:Query', 'dynamodb:Scan'], Resource: table, Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['run#*'] } } },
        ] } }] } },
        NarrowRole: { Type: 'AWS::IAM::Role' },
        OpenPolicy: { Type: 'AWS::IAM::Policy', Properties: { Roles: [{ Ref: 'OpenRole' }], PolicyDocument: { Statement: [
          { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], Resource: { 'Fn::Join': ['', ['arn:aws:dynamodb:eu-west-1:1:table/', { Ref: 'Table' }]] } },
          { Effect: 'Allow', Action: 's3:*', Resource: { 'Fn::Join': ['', [bucket, '/*']] } },
        ] } } },
        NarrowPolicy: { Type: 'AWS::IAM::Policy', Properties: { Roles: [{ Ref: 'NarrowRole' }], PolicyDocument: { Statement: [
          { Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: table, Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['run#*'] } } },
          { Effect: 'Allow', Action: 's3:GetObject', Resource: { 'Fn::Join': ['', [bucket, '/runs/*']] } },
          { Effect: 'Allow', Action: 'logs:PutLogEvents', Resource: '*' },
        ] } } },
      },
    };
    const allowed = { OpenRole: { items: ['runs'], objects: ['runs/'] }, ScanRole: { items: ['runs'] }, NarrowRole: { items: ['runs'], objects: ['runs/'] } };
    expect(beyondMeant(dataAccessOf(fixture, familyOf), allowed)).toEqual([
      'OpenRole: items of Table in every family (no dynamodb:LeadingKeys)',
      'OpenRole: objects of Bucket under every prefix',
      'ScanRole: items of Table in every family (no dynamodb:LeadingKeys)',
    ]);
    // The same grants, meant for another family, are named.
    expect(beyondMeant(dataAccessOf(fixture, familyOf), { ...allowed, NarrowRole: { items: ['conversations'], objects: ['conversations/'] } })).toContain('NarrowRole: items of Table in runs');
  });
});
