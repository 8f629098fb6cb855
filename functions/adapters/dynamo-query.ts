/** Queries read to the end, page by page, with the SDK's paginator. */
import { type DynamoDBDocumentClient, type QueryCommandInput, paginateQuery } from '@aws-sdk/lib-dynamodb';
import { guard } from './aws-errors.js';

/** Every item a query matches, across pages; a transient failure surfaces as `StoreUnavailable`, naming `what`. */
export function queryAll(doc: DynamoDBDocumentClient, input: QueryCommandInput, what: string): Promise<Record<string, unknown>[]> {
  return guard(what, async () => {
    const items: Record<string, unknown>[] = [];
    for await (const page of paginateQuery({ client: doc }, input)) items.push(...(page.Items ?? []));
    return items;
  });
}
