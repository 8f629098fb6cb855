/**
 * DynamoDB items as plain objects, over the low-level client: the five operations Stepwise uses,
 * with the inputs and outputs of `@aws-sdk/lib-dynamodb`'s document client, marshalled by the
 * functions it calls (`@aws-sdk/util-dynamodb`).
 *
 * Why not the document client itself: its commands cannot run on a client that keeps its resolved
 * middleware (the SDK's `cacheMiddleware`; the document client refuses one), and resolving the
 * stack again for every request was a measurable share of an agent-loop iteration, six requests
 * of which are DynamoDB's (docs/costs.md, "Why each request is cheap").
 */
import {
  BatchGetItemCommand,
  type DynamoDBClient,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  paginateQuery,
} from '@aws-sdk/client-dynamodb';
import type { DeleteCommandInput, GetCommandInput, PutCommandInput, QueryCommandInput, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { type NativeAttributeValue, marshall, unmarshall } from '@aws-sdk/util-dynamodb';

/** An item, a key or a page's last key, as plain values. */
export type Document = Record<string, NativeAttributeValue>;

/**
 * A request's options: a signal that abandons it. A client that gets options drops every stack it
 * keeps (smithy's `Client.send`), so send these through a client that keeps none (`awsClients`).
 */
export interface RequestOptions {
  abortSignal?: AbortSignal;
}

// The legacy parameters (`Expected`, `AttributeUpdates`, `KeyConditions`, `QueryFilter`) carry
// values this wrapper does not marshal: they are not accepted, expressions are.
type GetInput = GetCommandInput;
type DeleteInput = Omit<DeleteCommandInput, 'Expected'>;
type PutInput = Omit<PutCommandInput, 'Expected'>;
type UpdateInput = Omit<UpdateCommandInput, 'Expected' | 'AttributeUpdates'>;
export type QueryInput = Omit<QueryCommandInput, 'KeyConditions' | 'QueryFilter'>;

export interface QueryPage {
  Items: Document[];
  Count: number;
  LastEvaluatedKey?: Document;
}

/** Attributes whose value is `undefined` are left out of what is written, as the document client's `removeUndefinedValues` does. */
const writeOptions = { removeUndefinedValues: true };

const toWire = (values: Document | undefined) => (values === undefined ? undefined : marshall(values, writeOptions));
const fromWire = (values: Parameters<typeof unmarshall>[0] | undefined): Document | undefined =>
  values === undefined ? undefined : unmarshall(values);

export class Documents {
  constructor(readonly client: DynamoDBClient) {}

  async get(input: GetInput, options?: RequestOptions): Promise<{ Item?: Document }> {
    const out = await this.client.send(new GetItemCommand({ ...input, Key: toWire(input.Key) }), ...extra(options));
    return present({ Item: fromWire(out.Item) });
  }

  async put(input: PutInput, options?: RequestOptions): Promise<{ Attributes?: Document }> {
    const out = await this.client.send(
      new PutItemCommand({ ...input, Item: toWire(input.Item), ExpressionAttributeValues: toWire(input.ExpressionAttributeValues) }),
      ...extra(options),
    );
    return present({ Attributes: fromWire(out.Attributes) });
  }

  async update(input: UpdateInput, options?: RequestOptions): Promise<{ Attributes?: Document }> {
    const out = await this.client.send(
      new UpdateItemCommand({ ...input, Key: toWire(input.Key), ExpressionAttributeValues: toWire(input.ExpressionAttributeValues) }),
      ...extra(options),
    );
    return present({ Attributes: fromWire(out.Attributes) });
  }

  async delete(input: DeleteInput, options?: RequestOptions): Promise<void> {
    await this.client.send(
      new DeleteItemCommand({ ...input, Key: toWire(input.Key), ExpressionAttributeValues: toWire(input.ExpressionAttributeValues) }),
      ...extra(options),
    );
  }

  async query(input: QueryInput, options?: RequestOptions): Promise<QueryPage> {
    return pageOf(await this.client.send(new QueryCommand(wireQuery(input)), ...extra(options)));
  }

  /**
   * Items of one table by key (at most 100), in no particular order; keys DynamoDB left
   * unprocessed (throttled) are asked for again once, then left out: the caller must accept a partial answer.
   */
  async batchGet(input: { TableName: string; Keys: Document[]; ProjectionExpression?: string; ExpressionAttributeNames?: Record<string, string> }): Promise<Document[]> {
    const { TableName, Keys, ...rest } = input;
    const items: Document[] = [];
    let keys = Keys.map((k) => marshall(k));
    for (let attempt = 0; attempt < 2 && keys.length > 0; attempt++) {
      const out = await this.client.send(new BatchGetItemCommand({ RequestItems: { [TableName]: { Keys: keys, ...rest } } }));
      items.push(...(out.Responses?.[TableName] ?? []).map((item) => unmarshall(item)));
      keys = out.UnprocessedKeys?.[TableName]?.Keys ?? [];
    }
    return items;
  }

  /** Every page of a query, each request continuing from the page before. */
  async *pages(input: QueryInput): AsyncGenerator<QueryPage> {
    for await (const page of paginateQuery({ client: this.client }, wireQuery(input))) yield pageOf(page);
  }
}

function wireQuery(input: QueryInput) {
  return { ...input, ExpressionAttributeValues: toWire(input.ExpressionAttributeValues), ExclusiveStartKey: toWire(input.ExclusiveStartKey) };
}

function pageOf(out: { Items?: Parameters<typeof unmarshall>[0][]; Count?: number; LastEvaluatedKey?: Parameters<typeof unmarshall>[0] }): QueryPage {
  const page: QueryPage = { Items: (out.Items ?? []).map((item) => unmarshall(item)), Count: out.Count ?? 0 };
  if (out.LastEvaluatedKey) page.LastEvaluatedKey = unmarshall(out.LastEvaluatedKey);
  return page;
}

/** The options argument only when there is one: `send` uses the kept stack only when it gets none. */
function extra(options: RequestOptions | undefined): [] | [RequestOptions] {
  return options?.abortSignal ? [options] : [];
}

/** Leaves out the fields with no value, as the SDK's outputs do. */
function present<T extends Record<string, unknown>>(out: T): T {
  for (const key of Object.keys(out)) if (out[key] === undefined) delete out[key];
  return out;
}
