import { type IResource, Stack, Token, TokenComparison } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { listedAttributes, runIndexes } from '../functions/adapters/dynamo/layout.js';

/**
 * Up-front checks of the resources a team brings to StepwiseAgents (`existingTableObj`,
 * `existingBucketObj`, `existingEventBusObj`), each failing with one message that names the prop.
 */

/** Refuses an existing resource given together with the props that would adjust the one created instead. */
export function eitherExistingOrProps(existing: [string, unknown], props: [string, unknown]): void {
  const [existingName, existingValue] = existing;
  const [propsName, propsValue] = props;
  if (existingValue === undefined || propsValue === undefined) return;
  throw new Error(
    `${existingName} and ${propsName} cannot both be given: ${propsName} adjusts the resource the construct creates, and with ${existingName} it creates none (remove one).`,
  );
}

/**
 * Refuses a resource known to live in another account or Region than the stack: the functions
 * reach the table and bucket by name in their own account and Region, and a rule can only match
 * events on a bus of its own account and Region. An environment that is not known at synth passes.
 */
export function sameEnvironment(scope: Construct, prop: string, resource: IResource): void {
  const stack = Stack.of(scope);
  const pairs = [
    ['account', resource.env.account, stack.account],
    ['Region', resource.env.region, stack.region],
  ] as const;
  for (const [what, theirs, ours] of pairs) {
    if (Token.compareStrings(theirs, ours) === TokenComparison.DIFFERENT) {
      throw new Error(`${prop} is in ${what} ${theirs} and the stack in ${ours}: Stepwise's functions use it from the stack's own account and Region.`);
    }
  }
}

interface KeyElement {
  attributeName: string;
  keyType: string;
}
interface GlobalIndex {
  indexName: string;
  keySchema: KeyElement[];
  projection?: { projectionType?: string; nonKeyAttributes?: string[] };
}

/**
 * What a table created in this app lacks of the layout the functions rely on
 * (`functions/adapters/dynamo/layout.ts`): string keys `pk`/`sk`, the three run indexes with the
 * listed attributes projected, TTL on `expiresAt`. An imported table cannot be read at synth: none.
 */
export function tableLayoutProblems(table: dynamodb.ITable): string[] {
  const cfn = table.node.defaultChild;
  if (!(cfn instanceof dynamodb.CfnGlobalTable || cfn instanceof dynamodb.CfnTable)) return [];
  const stack = Stack.of(cfn);
  const resolved = <T>(value: unknown): T => stack.resolve(value) as T;
  const types = new Map(resolved<{ attributeName: string; attributeType: string }[]>(cfn.attributeDefinitions).map((a) => [a.attributeName, a.attributeType]));
  const problems: string[] = [];
  const keys = (where: string, schema: KeyElement[], partition: string, sort: string) => {
    const hash = schema.find((k) => k.keyType === 'HASH')?.attributeName;
    const range = schema.find((k) => k.keyType === 'RANGE')?.attributeName;
    if (hash !== partition || range !== sort || types.get(partition) !== 'S' || types.get(sort) !== 'S') {
      problems.push(`${where} must be keyed by the strings ${partition} (partition) and ${sort} (sort)`);
    }
  };
  keys('the table', resolved<KeyElement[]>(cfn.keySchema), 'pk', 'sk');
  const indexes = resolved<GlobalIndex[] | undefined>(cfn.globalSecondaryIndexes) ?? [];
  for (const expected of Object.values(runIndexes)) {
    const index = indexes.find((i) => i.indexName === expected.name);
    if (!index) {
      problems.push(`the global secondary index ${expected.name} is missing`);
      continue;
    }
    keys(`the index ${expected.name}`, index.keySchema, expected.partitionKey, expected.sortKey);
    const projection = index.projection ?? {};
    const projected = projection.projectionType === 'ALL' || (projection.projectionType === 'INCLUDE' && listedAttributes.every((a) => projection.nonKeyAttributes?.includes(a)));
    if (!projected) problems.push(`the index ${expected.name} must project ${listedAttributes.join(', ')} (INCLUDE) or ALL`);
  }
  const ttl = resolved<{ attributeName?: string; enabled?: boolean } | undefined>(cfn.timeToLiveSpecification);
  if (ttl?.attributeName !== 'expiresAt' || ttl.enabled === false) problems.push('time to live must be on the attribute expiresAt');
  return problems;
}
