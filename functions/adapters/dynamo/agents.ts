/**
 * Agent definitions on DynamoDB, once per version: `pk = agent#<name>`, `sk = v#<version>`,
 * written with a condition (a version is its content, so the first write stands) and kept as a
 * JSON string. A definition is at most ~200 KB (its instructions are at most 50,000 characters),
 * well inside an item.
 */
import type { Documents } from './documents.js';
import type { AgentDefinitionStore, AgentRef } from '../../core/agents/types.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import { itemFamilies } from './layout.js';

export class DynamoAgentDefinitionStore implements AgentDefinitionStore {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async get(ref: AgentRef): Promise<unknown> {
    const out = await guard('Reading an agent definition', () => this.doc.get({ TableName: this.table, Key: key(ref) }));
    const definition = (out.Item as { definition?: unknown } | undefined)?.definition;
    if (definition === undefined) return undefined;
    if (typeof definition !== 'string') throw new Error(`The stored definition of agent ${ref.name} version ${ref.version} is malformed.`);
    return JSON.parse(definition) as unknown;
  }

  async put(ref: AgentRef, definition: unknown): Promise<void> {
    try {
      await guard('Storing an agent definition', () =>
        this.doc.put({
          TableName: this.table,
          Item: { ...key(ref), definition: JSON.stringify(definition) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
  }
}

function key(ref: AgentRef) {
  return { pk: `${itemFamilies.agents}${ref.name}`, sk: `v#${ref.version}` };
}
