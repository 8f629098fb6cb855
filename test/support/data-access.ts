/**
 * What each IAM role of a synthesized template may do to the data: the DynamoDB item families
 * (`dynamodb:LeadingKeys` prefixes) and S3 key prefixes its Allow statements reach. A small
 * evaluator of the policy documents, not IAM itself: it resolves `Ref`, `Fn::GetAtt` and
 * `Fn::Join` far enough to know which table or bucket a resource names, and errs wide where it
 * cannot tell (a DynamoDB data action without a `LeadingKeys` condition reaches every family, a
 * `*` or an unknown resource every table and bucket, `NotAction` every action).
 */

/** Every family / every prefix. */
export const everything = '*';

/** The DynamoDB actions that read or write items (control-plane actions are left aside). */
const dynamoDataActions = [
  'GetItem', 'BatchGetItem', 'Query', 'Scan', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'ConditionCheckItem',
  'PartiQLSelect', 'PartiQLInsert', 'PartiQLUpdate', 'PartiQLDelete', 'GetRecords',
].map((a) => `dynamodb:${a}`);
/** Actions no `LeadingKeys` condition narrows: they name no partition key (a `ForAllValues` test of none passes). */
const unkeyedActions = new Set(['dynamodb:Scan', 'dynamodb:PartiQLSelect', 'dynamodb:PartiQLInsert', 'dynamodb:PartiQLUpdate', 'dynamodb:PartiQLDelete', 'dynamodb:GetRecords']);
/** The S3 actions that read, write or list objects. */
const s3DataActions = [
  'GetObject', 'GetObjectVersion', 'GetObjectAttributes', 'GetObjectAcl', 'GetObjectTagging', 'PutObject', 'PutObjectAcl', 'PutObjectTagging',
  'DeleteObject', 'DeleteObjectVersion', 'RestoreObject', 'ListBucket', 'ListBucketVersions', 'ListMultipartUploadParts', 'AbortMultipartUpload',
].map((a) => `s3:${a}`);

/** What one role reaches: by table (logical id, or `*`), its item families; by bucket, its key prefixes. */
export interface DataAccess {
  items: Map<string, Set<string>>;
  objects: Map<string, Set<string>>;
}

interface Statement {
  Effect?: string;
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}
type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

/** Each role's data access, by the role's logical id; roles that reach no data are left out. */
export function dataAccessOf(template: { Resources?: Resources }, familyOf: (prefix: string) => string): Map<string, DataAccess> {
  const resources = template.Resources ?? {};
  const roles = Object.keys(resources).filter((id) => resources[id]?.Type === 'AWS::IAM::Role');
  const access = new Map<string, DataAccess>();
  for (const role of roles) {
    const found: DataAccess = { items: new Map(), objects: new Map() };
    for (const statement of statementsOfRole(resources, role)) addStatement(found, statement, resources, familyOf);
    if (found.items.size || found.objects.size) access.set(role, found);
  }
  return access;
}

/** The role's statements: its inline policies, and the policies (managed or not) of the template attached to it. */
function statementsOfRole(resources: Resources, role: string): Statement[] {
  const documents: unknown[] = [];
  const props = resources[role]?.Properties ?? {};
  for (const policy of (props.Policies as { PolicyDocument: unknown }[] | undefined) ?? []) documents.push(policy.PolicyDocument);
  const managed = ((props.ManagedPolicyArns as unknown[] | undefined) ?? []).map(refOf);
  for (const [id, resource] of Object.entries(resources)) {
    const attached = ((resource.Properties?.Roles as unknown[] | undefined) ?? []).some((r) => refOf(r) === role);
    const isPolicy = resource.Type === 'AWS::IAM::Policy' || resource.Type === 'AWS::IAM::ManagedPolicy';
    if (isPolicy && (attached || managed.includes(id))) documents.push(resource.Properties?.PolicyDocument);
  }
  return documents.flatMap((d) => [((d as { Statement?: Statement | Statement[] } | undefined)?.Statement ?? [])].flat());
}

function addStatement(found: DataAccess, statement: Statement, resources: Resources, familyOf: (prefix: string) => string): void {
  if (statement.Effect !== 'Allow') return;
  const actions = statement.NotAction !== undefined ? ['*'] : [statement.Action ?? []].flat();
  const granted = (list: string[]) => list.filter((action) => actions.some((pattern) => globMatches(pattern.toLowerCase(), action.toLowerCase())));
  const dynamo = granted(dynamoDataActions);
  const s3 = granted(s3DataActions);
  if (!dynamo.length && !s3.length) return;
  const targets = [statement.Resource ?? '*'].flat().map((r) => resolve(r, resources));
  const condition = statement.Condition ?? {};
  if (dynamo.length) {
    const leading = conditionValues(condition, 'dynamodb:LeadingKeys', ['ForAllValues:StringLike', 'ForAllValues:StringEquals']);
    const families = leading && !dynamo.some((a) => unkeyedActions.has(a)) ? leading.map((p) => familyOf(p.replace(/\*$/, ''))) : [everything];
    for (const target of targets) {
      if (target.kind === 'any') add(found.items, everything, families);
      if (target.kind === 'table') add(found.items, target.id, families);
    }
  }
  if (s3.length) {
    const listed = conditionValues(condition, 's3:prefix', ['StringLike', 'StringEquals']);
    for (const target of targets) {
      if (target.kind === 'any') add(found.objects, everything, [everything]);
      if (target.kind !== 'bucket') continue;
      // The bucket itself (ListBucket) reaches what its s3:prefix condition names; bucket/<prefix>* the objects under it.
      const prefixes = target.path === undefined ? (listed ?? [everything]) : [target.path === '*' ? everything : target.path];
      add(found.objects, target.id, prefixes.map((p) => (p === everything ? p : p.replace(/\*$/, ''))));
    }
  }
}

function add(map: Map<string, Set<string>>, key: string, values: string[]): void {
  const set = map.get(key) ?? new Set<string>();
  for (const value of values) set.add(value);
  map.set(key, set);
}

/** The values of a condition key under one of the operators, or undefined when none of them names it. */
function conditionValues(condition: Record<string, Record<string, unknown>>, key: string, operators: string[]): string[] | undefined {
  for (const operator of operators) {
    const value = condition[operator]?.[key];
    if (value !== undefined) return [value].flat().map(String);
  }
  return undefined;
}

type Target = { kind: 'table' | 'bucket'; id: string; path?: string } | { kind: 'any' } | { kind: 'other' };

/** Which table or bucket an ARN names: a token of a table or bucket resource, with what follows it. */
function resolve(resource: unknown, resources: Resources): Target {
  const parts = resource !== null && typeof resource === 'object' && 'Fn::Join' in resource ? (resource as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1] : [resource];
  if (parts.length === 1 && parts[0] === '*') return { kind: 'any' };
  const index = parts.findIndex((p) => typeOf(p, resources) !== undefined);
  if (index < 0) {
    const text = parts.map((p) => (typeof p === 'string' ? p : '?')).join('');
    // An ARN written out whose table or bucket is a wildcard reaches any of them.
    return /:table\/\*|:::\*|^arn:[^:]*:(dynamodb|s3):.*\*/.test(text) ? { kind: 'any' } : { kind: 'other' };
  }
  const type = typeOf(parts[index], resources);
  const id = refOf(parts[index]) ?? '';
  const rest = parts.slice(index + 1).map((p) => (typeof p === 'string' ? p : '?')).join('');
  if (type === 'table') return { kind: 'table', id };
  return { kind: 'bucket', id, ...(rest.startsWith('/') ? { path: rest.slice(1) } : {}) };
}

function typeOf(token: unknown, resources: Resources): 'table' | 'bucket' | undefined {
  const id = refOf(token);
  const type = id ? resources[id]?.Type : undefined;
  if (type === 'AWS::DynamoDB::Table' || type === 'AWS::DynamoDB::GlobalTable') return 'table';
  if (type === 'AWS::S3::Bucket') return 'bucket';
  return undefined;
}

/** The logical id a `Ref` or `Fn::GetAtt` names. */
function refOf(token: unknown): string | undefined {
  if (token === null || typeof token !== 'object') return undefined;
  if ('Ref' in token) return String((token as { Ref: unknown }).Ref);
  if ('Fn::GetAtt' in token) return String((token as { 'Fn::GetAtt': unknown[] })['Fn::GetAtt'][0]);
  return undefined;
}

/** IAM's action wildcards: `*` any run of characters, `?` one. */
function globMatches(pattern: string, value: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${source}$`).test(value);
}
