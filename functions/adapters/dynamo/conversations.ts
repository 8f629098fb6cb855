/**
 * Conversation memory on DynamoDB: one item per message, one per tool result, all in one
 * partition per conversation so a single paginated Query reads a whole conversation in order.
 *
 *   pk = conv#<conversationId>
 *   sk = m#<seq>                    a message
 *   sk = m#<seq>#r#<index>          the result of call <index> of message <seq>
 *   sk = m#<seq>#s                  a summary of the older messages, made when <seq> was the last
 *
 * Every write is conditional on the item not existing, so a retried step cannot duplicate or
 * overwrite. Bodies over `inlineLimitBytes` live in S3 and the item holds the key.
 *
 * Because items are written once and never change, a warm Lambda keeps the conversations it
 * has read, and what it wrote to them, and asks DynamoDB only for what follows its last message:
 * a step reads the new tool results, not the whole history again.
 */
import type { Documents, QueryInput } from './documents.js';
import * as z from 'zod';
import { type Conversation, type ConversationRecord, type ConversationStore, Compaction, MessageMeta, type NewMessage, type ResultOptions, type StoredMessage, type Turn } from '../../core/conversation/types.js';
import { assembleConversation, seqKey } from '../../core/conversation/conversation.js';
import { StoredDataInvalid } from '../../core/errors/errors.js';
import type { ConversationFrom } from '../../core/stream/types.js';
import { ContentBlock, Role, ToolResultBlock } from '../../core/model/messages.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import { forEachLimited } from '../aws/parallel.js';
import type { BlobStore } from '../s3/blobs.js';

export const defaultInlineLimitBytes = 100 * 1024;

const ItemBase = z.looseObject({
  pk: z.string(),
  sk: z.string(),
  body: z.string().optional(),
  bodyRef: z.string().optional(),
});
type ItemBase = z.infer<typeof ItemBase>;

const MessageItem = ItemBase.extend({
  seq: z.number(),
  role: Role,
  meta: MessageMeta,
  carriesSeq: z.number().optional(),
  carriesCount: z.number().optional(),
});
type MessageItem = z.infer<typeof MessageItem>;

const ResultItem = ItemBase.extend({ seq: z.number(), index: z.number(), ran: z.boolean().optional() });

const resultMarker = '#r#';
/** The items a fork copies: messages, tool results and summaries; anything else under the key is the source's alone. */
const copiedKey = /^m#\d{10}(#r#\d{4,}|#s)?$/;
/** Sorts after a message's results and before the next message. */
const compactionMarker = '#s';

export interface DynamoConversationOptions {
  doc: Documents;
  table: string;
  blobs: BlobStore;
  inlineLimitBytes?: number;
  /** How many conversations to keep read in memory between calls. @default 16 */
  cachedConversations?: number;
}

/** A conversation's records read so far, in key order. */
interface Cached {
  records: { sk: string; record: ConversationRecord }[];
}

export class DynamoConversationStore implements ConversationStore {
  private readonly doc: Documents;
  private readonly table: string;
  private readonly blobs: BlobStore;
  private readonly inlineLimit: number;
  private readonly cache = new Map<string, Cached>();
  private readonly cacheSize: number;

  constructor(options: DynamoConversationOptions) {
    this.doc = options.doc;
    this.table = options.table;
    this.blobs = options.blobs;
    this.inlineLimit = options.inlineLimitBytes ?? defaultInlineLimitBytes;
    this.cacheSize = options.cachedConversations ?? 16;
  }

  async load(conversationId: string): Promise<Conversation> {
    const cached = this.cache.get(conversationId);
    this.cache.delete(conversationId);
    // Read what may be new: every item after the last message known (its results and summary,
    // which may have been written since, and the messages after it). What this store wrote
    // itself is known already (`remember`), so a step reads only what others wrote.
    const last = cached?.records.findLast(({ record }) => record.kind === 'message')?.sk;
    const from = last === undefined ? 'm#' : `${last}#`;
    const kept = cached?.records.filter(({ sk }) => sk < from) ?? [];
    const fresh = await this.withBodies(await this.query(conversationId, from, 'm#~'));
    const records = [...kept, ...fresh.map((entry) => ({ sk: entry.item.sk, record: toRecord(entry) }))];
    // Kept only once it assembles: records that do not are read whole again next time.
    const conversation = assembleConversation(records.map(({ record }) => record));
    this.cache.set(conversationId, { records });
    if (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value as string);
    return conversation;
  }

  async loadTurn(conversationId: string, seq: number): Promise<Turn | undefined> {
    const first = `m#${seqKey(seq)}`;
    const items = await this.withBodies(await this.query(conversationId, first, `${first}${resultMarker}~`));
    const head = items[0];
    if (!head || head.item.sk !== first) return undefined;
    const message = toMessage(MessageItem.parse(head.item), parseBlocks(head.body));
    const results: Turn['results'] = [];
    for (const { item, body } of items.slice(1)) {
      const { index } = ResultItem.parse(item);
      results[index] = ToolResultBlock.parse(JSON.parse(body));
    }
    return { message, results };
  }

  /**
   * The items from `from` on, for a run's event stream (docs/events.md, "Read order, and why it is safe"):
   * that run's messages and every tool result; other runs' messages and summaries are filtered
   * out by DynamoDB. Read every time, not cached: the stream asks only for what may be new.
   */
  async itemsFrom(conversationId: string, from: ConversationFrom, runId: string): Promise<ConversationRecord[]> {
    const start = from.result === undefined ? `m#${seqKey(from.seq)}` : resultSk(from.seq, from.result);
    const items = await queryAll(
      this.doc,
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        FilterExpression: '#meta.#runId = :runId OR attribute_exists(#index)',
        ExpressionAttributeNames: { '#meta': 'meta', '#runId': 'runId', '#index': 'index' },
        ExpressionAttributeValues: { ':pk': pkOf(conversationId), ':from': start, ':to': 'm#~', ':runId': runId },
        ConsistentRead: true,
      },
      'Reading conversation memory',
    );
    const entries = await this.withBodies(items.map((item) => ItemBase.parse(item)));
    return entries.map(toRecord);
  }

  async append(conversationId: string, message: NewMessage): Promise<boolean> {
    const sk = `m#${seqKey(message.seq)}`;
    const json = JSON.stringify(message.content);
    const item: Record<string, unknown> = {
      pk: pkOf(conversationId),
      sk,
      seq: message.seq,
      role: message.role,
      meta: message.meta,
      ...(message.carries ? { carriesSeq: message.carries.seq, carriesCount: message.carries.count } : {}),
      ...(await this.body(conversationId, sk, json)),
    };
    if (!(await this.putNew(item))) {
      this.cache.delete(conversationId);
      return false;
    }
    this.remember(conversationId, item, json);
    return true;
  }

  async putResult(conversationId: string, seq: number, index: number, result: ToolResultBlock, options: ResultOptions = {}): Promise<ToolResultBlock> {
    const { fullOutput } = options;
    const sk = resultSk(seq, index);
    const json = JSON.stringify(result);
    const item = {
      pk: pkOf(conversationId),
      sk,
      seq,
      index,
      ...(await this.body(conversationId, sk, json)),
      // Kept only when false: a result item without it is one whose call ran.
      ...(options.ran === false ? { ran: false } : {}),
      // The whole output of a result the model sees cut, kept for people and later tools.
      ...(fullOutput === undefined
        ? {}
        : { fullOutputRef: await this.blobs.put(`conversations/${encodeURIComponent(conversationId)}/${sk}-full`, fullOutput), fullOutputChars: fullOutput.length }),
    };
    if (await this.putNew(item)) {
      this.remember(conversationId, item, json);
      return result;
    }
    // Another writer's item is in its place: what this store keeps no longer says what is stored.
    this.cache.delete(conversationId);
    return ToolResultBlock.parse(JSON.parse(await this.storedBody(conversationId, sk, 'Result', 'Reading a tool result')));
  }

  async putCompaction(conversationId: string, compaction: Compaction): Promise<Compaction> {
    const sk = `m#${seqKey(compaction.atSeq)}${compactionMarker}`;
    const json = JSON.stringify(compaction);
    const item = { pk: pkOf(conversationId), sk, ...(await this.body(conversationId, sk, json)) };
    if (await this.putNew(item)) {
      this.remember(conversationId, item, json);
      return compaction;
    }
    this.cache.delete(conversationId);
    return Compaction.parse(JSON.parse(await this.storedBody(conversationId, sk, 'Summary', 'Reading a summary')));
  }

  /**
   * A fork's copy (`ForkCopies.conversation`): the items of `from` before message `beforeSeq`
   * (messages, their tool results, and summaries made at an earlier message, whose keys sort
   * before it) written to `to` with the same sort keys and attributes. Large bodies stay where
   * they are in S3: they are written once and never change, so both conversations can name them.
   * Conditional puts: a repeated copy keeps what is there and writes what is missing.
   */
  async copyBefore(from: string, to: string, beforeSeq: number): Promise<number> {
    const items = await queryAll(
      this.doc,
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk < :to',
        ExpressionAttributeValues: { ':pk': pkOf(from), ':to': `m#${seqKey(beforeSeq)}` },
        ConsistentRead: true,
      },
      'Reading conversation memory to fork it',
    );
    let written = 0;
    const known = items.filter((item) => copiedKey.test(String(item.sk)));
    await forEachLimited(known, 16, async (item) => {
      if (await this.putNew({ ...item, pk: pkOf(to) })) written++;
    });
    return written;
  }

  /**
   * Keeps an item this store has just written in the conversation's cached records, in key order,
   * as a load would read it (the same record from the same JSON), so the next load need not read
   * it back. Only a conversation already cached: a load starts from its records.
   */
  private remember(conversationId: string, item: Record<string, unknown>, body: string): void {
    const cached = this.cache.get(conversationId);
    if (!cached) return;
    const entry = { item: ItemBase.parse(item), body };
    const at = cached.records.findIndex(({ sk }) => sk >= entry.item.sk);
    if (at >= 0 && cached.records[at]?.sk === entry.item.sk) return;
    cached.records.splice(at < 0 ? cached.records.length : at, 0, { sk: entry.item.sk, record: toRecord(entry) });
  }

  /** The body of the item a conditional write found already there: the first writer's. */
  private async storedBody(conversationId: string, sk: string, what: string, reading: string): Promise<string> {
    const existing = await guard(reading, () =>
      this.doc.get({ TableName: this.table, Key: { pk: pkOf(conversationId), sk }, ConsistentRead: true }),
    );
    if (!existing.Item) throw new StoredDataInvalid(`${what} ${sk} of ${conversationId} vanished after a failed write.`);
    const [loaded] = await this.withBodies([ItemBase.parse(existing.Item)]);
    return loaded?.body ?? 'null';
  }

  /** Puts an item unless one with its key exists; `false` when it did. */
  private async putNew(item: Record<string, unknown>): Promise<boolean> {
    try {
      await guard('Writing conversation memory', () =>
        this.doc.put({ TableName: this.table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  private async body(conversationId: string, sk: string, json: string): Promise<{ body: string } | { bodyRef: string }> {
    if (Buffer.byteLength(json, 'utf8') <= this.inlineLimit) return { body: json };
    return { bodyRef: await this.blobs.put(`conversations/${encodeURIComponent(conversationId)}/${sk}`, json) };
  }

  private async query(conversationId: string, from: string, to: string): Promise<ItemBase[]> {
    const items = await queryAll(
      this.doc,
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': pkOf(conversationId), ':from': from, ':to': to },
        ConsistentRead: true,
      },
      'Reading conversation memory',
    );
    return items.map((item) => ItemBase.parse(item));
  }

  /** Pairs each item with its body, fetching the ones kept in S3 in parallel. */
  private async withBodies(items: ItemBase[]): Promise<{ item: ItemBase; body: string }[]> {
    return Promise.all(
      items.map(async (item) => {
        if (item.body !== undefined) return { item, body: item.body };
        if (item.bodyRef !== undefined) return { item, body: await this.blobs.get(item.bodyRef) };
        throw new StoredDataInvalid(`Item ${item.pk} ${item.sk} has neither a body nor a reference.`);
      }),
    );
  }
}

function pkOf(conversationId: string): string {
  return `conv#${conversationId}`;
}

function resultSk(seq: number, index: number): string {
  return `m#${seqKey(seq)}${resultMarker}${index.toString().padStart(4, '0')}`;
}

function parseBlocks(body: string): ContentBlock[] {
  return z.array(ContentBlock).parse(JSON.parse(body));
}

function toMessage(item: MessageItem, content: ContentBlock[]): StoredMessage {
  return { seq: item.seq, role: item.role, content, meta: item.meta };
}

/** The record an item holds, for `assembleConversation`. */
function toRecord({ item, body }: { item: ItemBase; body: string }): ConversationRecord {
  if (item.sk.endsWith(compactionMarker)) return { kind: 'compaction', compaction: Compaction.parse(JSON.parse(body)) };
  if (item.sk.includes(resultMarker)) {
    const { seq, index, ran } = ResultItem.parse(item);
    return { kind: 'result', seq, index, result: ToolResultBlock.parse(JSON.parse(body)), ...(ran === false ? { ran } : {}) };
  }
  const message = MessageItem.parse(item);
  return {
    kind: 'message',
    seq: message.seq,
    role: message.role,
    meta: message.meta,
    content: parseBlocks(body),
    carries:
      message.carriesSeq === undefined ? undefined : { seq: message.carriesSeq, count: message.carriesCount ?? 0 },
  };
}

/** Every item a query matches, across pages; a transient failure surfaces as `StoreUnavailable`, naming `what`. */
export function queryAll(doc: Documents, input: QueryInput, what: string): Promise<Record<string, unknown>[]> {
  return guard(what, async () => {
    const items: Record<string, unknown>[] = [];
    for await (const page of doc.pages(input)) items.push(...page.Items);
    return items;
  });
}
