/**
 * Live text on DynamoDB: one item per model call, in its run's partition, written whole each time
 * it grows (docs/events.md, "Live text").
 *
 *   pk = live#<runId>
 *   sk = <agent>#<seqKey(seq)>#<attempt>
 *
 * A write is a plain PutItem: the writer only ever appends chunks, so the item only grows, and a
 * write that lands late replaces nothing a reader has not seen a prefix of.
 */
import type { Documents } from './documents.js';
import { StoredDataInvalid } from '../../core/errors/errors.js';
import { LiveAttempt, type LiveFrom, type LiveText, type LiveTextReader, type LiveTexts } from '../../core/live/types.js';
import { liveSortKey } from '../../core/live/writer.js';
import { seqKey } from '../../core/conversation/conversation.js';
import { guard } from '../aws/errors.js';
import { queryAll } from './conversations.js';
import { itemFamilies } from './layout.js';

export class DynamoLiveText implements LiveText, LiveTextReader, LiveTexts {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async write(attempt: LiveAttempt, options: { signal?: AbortSignal } = {}): Promise<void> {
    await guard('Writing live text', () =>
      this.doc.put(
        { TableName: this.table, Item: { pk: pkOf(attempt.runId), sk: liveSortKey(attempt), ...attempt } },
        options.signal ? { abortSignal: options.signal } : {},
      ),
    );
  }

  /**
   * The run's attempts in key order (agent, then seq, then start), only those whose key sorts
   * after `afterSk` when given. Strongly consistent, so a reader never sees an item shrink.
   */
  async list(runId: string, after?: string | LiveFrom): Promise<LiveAttempt[]> {
    if (typeof after === 'object') return this.listFrom(runId, after);
    const afterSk = after;
    const items = await queryAll(
      this.doc,
      {
        TableName: this.table,
        KeyConditionExpression: afterSk === undefined ? 'pk = :pk' : 'pk = :pk AND sk > :after',
        ExpressionAttributeValues: { ':pk': pkOf(runId), ...(afterSk === undefined ? {} : { ':after': afterSk }) },
        ConsistentRead: true,
      },
      'Reading live text',
    );
    return items.map((item) => {
      const parsed = LiveAttempt.safeParse(item);
      if (!parsed.success) throw new StoredDataInvalid(`Live text item ${String(item.pk)} ${String(item.sk)} is malformed: ${parsed.error.message}`);
      return parsed.data;
    });
  }

  /** An agent's attempts from a seq (and an attempt within it) on, as the event stream reads them. */
  private async listFrom(runId: string, from: LiveFrom): Promise<LiveAttempt[]> {
    const items = await queryAll(
      this.doc,
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': pkOf(runId), ':from': liveSk(from.agent, from.seq, from.attempt), ':to': `${from.agent}#~` },
        ConsistentRead: true,
      },
      'Reading live text',
    );
    return items.map(({ pk: _pk, sk: _sk, ...item }) => LiveAttempt.parse(item));
  }
}

/** The sort key of an attempt, or of where a read starts. */
export function liveSk(agent: string, seq: number, attempt = ''): string {
  return `${agent}#${seqKey(seq)}#${attempt}`;
}

function pkOf(runId: string): string {
  return `${itemFamilies.live}${runId}`;
}
