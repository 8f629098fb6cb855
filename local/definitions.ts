/**
 * The deployed stack's own definitions, for the local runtime: the CDK app is synthesized
 * in-process (bundling skipped) and each state machine's `DefinitionString` is resolved to plain
 * ASL with local ARNs, so local and deployed behaviour come from one definition.
 */
import { localRegion } from './stand-ins/emulators.js';

export const localAccount = '000000000000';

interface CfnResource {
  Type: string;
  Properties?: Record<string, unknown>;
}

export interface Template {
  Resources: Record<string, CfnResource>;
}

/** What one logical resource is locally. */
export interface LocalResource {
  logicalId: string;
  type: string;
  /** The value `Ref` gives (a name or ARN, depending on the type). */
  ref: string;
  /** The value `Fn::GetAtt [id, "Arn"]` gives. */
  arn: string;
}

export interface LocalStateMachine {
  logicalId: string;
  arn: string;
  name: string;
  definition: Record<string, unknown>;
}

export interface LocalFunction {
  logicalId: string;
  arn: string;
  /** The module under `functions/handlers/` (its `STEPWISE_HANDLER` variable). */
  handler: string;
}

export interface LocalNames {
  table: string;
  bucket: string;
  bus?: string;
}

/** Local identities for every resource of the template; the table and bucket get the emulators' names. */
export function localResources(template: Template, names: LocalNames): Map<string, LocalResource> {
  const resources = new Map<string, LocalResource>();
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    const arnOf = (service: string, kind: string, sep = ':') =>
      `arn:aws:${service}:${localRegion}:${localAccount}:${kind}${sep}${logicalId}`;
    let ref = logicalId;
    let arn = `arn:aws:local:${localRegion}:${localAccount}:${logicalId}`;
    switch (resource.Type) {
      case 'AWS::Lambda::Function':
        ref = logicalId;
        arn = arnOf('lambda', 'function');
        break;
      case 'AWS::StepFunctions::StateMachine':
        arn = arnOf('states', 'stateMachine');
        ref = arn;
        break;
      case 'AWS::DynamoDB::GlobalTable':
      case 'AWS::DynamoDB::Table':
        ref = names.table;
        arn = `arn:aws:dynamodb:${localRegion}:${localAccount}:table/${names.table}`;
        break;
      case 'AWS::S3::Bucket':
        if (logicalId.includes('Workspaces')) ref = names.bucket;
        arn = `arn:aws:s3:::${ref}`;
        break;
      case 'AWS::Events::EventBus':
        ref = names.bus ?? logicalId;
        arn = `arn:aws:events:${localRegion}:${localAccount}:event-bus/${ref}`;
        break;
    }
    resources.set(logicalId, { logicalId, type: resource.Type, ref, arn });
  }
  return resources;
}

const pseudo: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': localRegion,
  'AWS::AccountId': localAccount,
  'AWS::URLSuffix': 'amazonaws.com',
};

/** Resolves an intrinsic-function value of the template (`Fn::Join`, `Ref`, `Fn::GetAtt`, …). */
export function resolveValue(value: unknown, resources: Map<string, LocalResource>): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => resolveValue(v, resources));
  const entries = Object.entries(value as Record<string, unknown>);
  const [key, arg] = entries[0] ?? [];
  if (entries.length !== 1 || !key) return Object.fromEntries(entries.map(([k, v]) => [k, resolveValue(v, resources)]));
  switch (key) {
    case 'Ref': {
      const name = String(arg);
      const known = pseudo[name] ?? resources.get(name)?.ref;
      if (known === undefined) throw new Error(`Cannot resolve Ref ${name} locally.`);
      return known;
    }
    case 'Fn::GetAtt': {
      const [id, attribute] = arg as [string, string];
      const resource = resources.get(id);
      if (!resource) throw new Error(`Cannot resolve Fn::GetAtt ${id}.${attribute} locally.`);
      if (attribute === 'Arn') return resource.arn;
      if (attribute === 'Name') return resource.ref;
      throw new Error(`Cannot resolve attribute ${attribute} of ${id} locally.`);
    }
    case 'Fn::Join': {
      const [separator, parts] = arg as [string, unknown[]];
      return parts.map((p) => String(resolveValue(p, resources))).join(separator);
    }
    case 'Fn::Select': {
      const [index, list] = arg as [number, unknown];
      return (resolveValue(list, resources) as unknown[])[index];
    }
    case 'Fn::Split': {
      const [separator, source] = arg as [string, unknown];
      return String(resolveValue(source, resources)).split(separator);
    }
    case 'Fn::Sub': {
      const [text, vars = {}] = (typeof arg === 'string' ? [arg] : arg) as [string, Record<string, unknown>?];
      return text.replace(/\$\{([^}]+)\}/g, (_, name: string) => {
        if (name in vars) return String(resolveValue(vars[name], resources));
        const [id, attribute] = name.split('.');
        return String(resolveValue(attribute ? { 'Fn::GetAtt': [id, attribute] } : { Ref: id }, resources));
      });
    }
    default:
      return Object.fromEntries(entries.map(([k, v]) => [k, resolveValue(v, resources)]));
  }
}

/** Every state machine of the template as plain ASL with local ARNs. */
export function localStateMachines(template: Template, resources: Map<string, LocalResource>): LocalStateMachine[] {
  return Object.entries(template.Resources)
    .filter(([, r]) => r.Type === 'AWS::StepFunctions::StateMachine')
    .map(([logicalId, r]) => {
      const props = r.Properties ?? {};
      let text = String(resolveValue(props.DefinitionString, resources));
      const substitutions = (props.DefinitionSubstitutions ?? {}) as Record<string, unknown>;
      for (const [name, value] of Object.entries(substitutions)) {
        text = text.split(`\${${name}}`).join(String(resolveValue(value, resources)));
      }
      const resource = resources.get(logicalId);
      if (!resource) throw new Error(`No local identity for ${logicalId}.`);
      return { logicalId, arn: resource.arn, name: logicalId, definition: JSON.parse(text) as Record<string, unknown> };
    });
}

/** Every Lambda function of the template with the handler module it runs. */
export function localFunctions(template: Template, resources: Map<string, LocalResource>): LocalFunction[] {
  return Object.entries(template.Resources)
    .filter(([, r]) => r.Type === 'AWS::Lambda::Function')
    .flatMap(([logicalId, r]) => {
      const variables = ((r.Properties?.Environment as { Variables?: Record<string, unknown> })?.Variables ?? {}) as Record<
        string,
        unknown
      >;
      const handler = variables.STEPWISE_HANDLER;
      const arn = resources.get(logicalId)?.arn;
      return typeof handler === 'string' && arn ? [{ logicalId, arn, handler }] : [];
    });
}
