/** What the CDK tests read from a synthesized template. */
import { Template } from 'aws-cdk-lib/assertions';
import { expect, inject } from 'vitest';
import type { Synthesized } from './synth.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The default StepwiseStack's template and cdk-nag findings (test/support/synth-stepwise.ts). */
    stepwiseStack: { template: Record<string, unknown>; violations: string[] };
  }
}

/** The default StepwiseStack, synthesized once for the whole run. */
export function stepwiseStack(): Synthesized {
  const { template, violations } = inject('stepwiseStack');
  return { template: Template.fromJSON(template), violations };
}

/** A logical id without the hash CDK appends to it. */
export function withoutHash(id: string): string {
  return id.replace(/[0-9A-F]{8}$/, '');
}

/** The logical id of the one resource of `type` whose id starts with `prefix`. */
export function logicalIdOf(template: Template, prefix: string, type: string): string {
  const ids = Object.keys(template.findResources(type)).filter((id) => id.startsWith(prefix));
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

/** A state machine's ASL, with the template's tokens left as they are. */
export function definitionOf(template: Template, prefix: string): Record<string, unknown> {
  const id = logicalIdOf(template, prefix, 'AWS::StepFunctions::StateMachine');
  const sm = template.findResources('AWS::StepFunctions::StateMachine')[id] as { Properties: { DefinitionString: unknown } };
  // Tokens sit between string fragments of an Fn::Join; a placeholder JSON string keeps the document parseable.
  const join = (sm.Properties.DefinitionString as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
  const tokens: unknown[] = [];
  const text = join.map((part) => (typeof part === 'string' ? part : `@@${tokens.push(part) - 1}@@`)).join('');
  const restore = (value: unknown): unknown => {
    if (typeof value === 'string') {
      const parts = value.split(/@@(\d+)@@/);
      if (parts.length === 1) return value;
      const pieces = parts.map((p, i) => (i % 2 ? tokens[Number(p)] : p)).filter((p) => p !== '');
      return pieces.length === 1 ? pieces[0] : { 'Fn::Join': ['', pieces] };
    }
    if (Array.isArray(value)) return value.map(restore);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, restore(v)]));
    return value;
  };
  return restore(JSON.parse(text)) as Record<string, unknown>;
}

export interface Statement {
  Action: string | string[];
  Resource: unknown;
  Effect?: string;
  Condition?: unknown;
}

/** The IAM statements of the policies whose logical ids start with `prefix`. */
export function statementsOf(template: Template, prefix: string): Statement[] {
  return Object.entries(template.findResources('AWS::IAM::Policy'))
    .filter(([id]) => id.startsWith(prefix))
    .flatMap(([, p]) => (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement);
}

/** The logical ids, without their hashes, of the policies whose JSON passes `test`. */
export function policiesWhere(template: Template, test: (json: string) => boolean): string[] {
  return Object.entries(template.findResources('AWS::IAM::Policy'))
    .filter(([, p]) => test(JSON.stringify(p)))
    .map(([id]) => withoutHash(id));
}

export interface FunctionResource {
  Properties: { Timeout: number; Environment: { Variables: Record<string, unknown> } } & Record<string, unknown>;
}

/** Every Lambda function of the template. */
export function functionsOf(template: Template): FunctionResource[] {
  return Object.values(template.findResources('AWS::Lambda::Function')) as FunctionResource[];
}

/** The function built from `functions/handlers/<handler>.ts`. */
export function functionOf(template: Template, handler: string): FunctionResource {
  const found = functionsOf(template).filter((f) => f.Properties.Environment.Variables.STEPWISE_HANDLER === handler);
  expect(found).toHaveLength(1);
  return found[0] as FunctionResource;
}
