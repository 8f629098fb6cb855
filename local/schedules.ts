/** The schedules a data folder keeps from an earlier `npm run dev`, for the local scheduler to fire again (dev only: a Scan). */
import { type DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { itemFamilies } from '../functions/adapters/dynamo/layout.js';
import { Schedule } from '../functions/core/schedules/types.js';

/** Every schedule in the table. */
export async function storedSchedules(dynamo: DynamoDBClient, table: string): Promise<Schedule[]> {
  const found: Schedule[] = [];
  const pages = paginateScan(
    { client: dynamo },
    { TableName: table, FilterExpression: 'begins_with(pk, :family)', ExpressionAttributeValues: { ':family': { S: itemFamilies.schedules } } },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      const parsed = Schedule.safeParse(unmarshall(item));
      if (parsed.success) found.push(parsed.data);
    }
  }
  return found;
}
