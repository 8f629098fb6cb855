/**
 * Live attempts on DynamoDB, the stream's side of them (`core/live-text.ts`):
 *
 *   pk = live#<runId>, sk = <agent>#<seqKey(seq)>#<attempt>   { runId, agent, seq, attempt, chunks, updatedAt }
 *
 * One Query reads an agent's attempts from a seq (and an attempt) on, consistently: an item only
 * grows, so a reader never sees chunks it saw disappear.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { seqKey } from '../../core/conversation.js';
import { LiveAttempt, type LiveFrom, type LiveTexts } from '../../core/live-text.js';
import { itemFamilies } from './layout.js';
import { queryAll } from './conversations.js';

/** The sort key of an attempt, or of where a read starts. */
export function liveSk(agent: string, seq: number, attempt = ''): string {
  return `${agent}#${seqKey(seq)}#${attempt}`;
}

export class DynamoLiveTexts implements LiveTexts {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async list(runId: string, from: LiveFrom): Promise<LiveAttempt[]> {
    const items = await queryAll(
      this.doc,
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': `${itemFamilies.live}${runId}`, ':from': liveSk(from.agent, from.seq, from.attempt), ':to': `${from.agent}#~` },
        ConsistentRead: true,
      },
      'Reading live text',
    );
    return items.map(({ pk: _pk, sk: _sk, ...item }) => LiveAttempt.parse(item));
  }
}
