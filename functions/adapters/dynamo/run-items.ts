/**
 * How a run record lies in its item (`functions/adapters/dynamo/runs.ts`): its key, the structured
 * answer as JSON text, the usage counters per agent, the index attributes a listing reads, the
 * cursors of a listing, and the totals an update answers.
 */
import { type Owner } from '../../core/callers/types.js';
import { ownerKey } from '../../core/callers/access.js';
import type { AgentName } from '../../core/agents/types.js';
import { InvalidCursor, type Run, type RunResult, type RunQuery, type RunTotals, placesOf, summaryGoalChars } from '../../core/runs/types.js';
import { type Usage, zeroUsage } from '../../core/model/messages.js';
import { itemFamilies, progressAttributes, runIndexes, runningAttribute } from './layout.js';

/** A result as the item keeps it: the structured answer as JSON text. */
export function toStoredResult({ output, ...result }: RunResult): Record<string, unknown> {
  return output ? { ...result, outputJson: JSON.stringify(output) } : result;
}

export function fromStoredResult({ outputJson, ...result }: Record<string, unknown>): Record<string, unknown> {
  return typeof outputJson === 'string' ? { ...result, output: JSON.parse(outputJson) as unknown } : result;
}

export function usageMaps(run: Run): Partial<Record<AgentName, Usage>> {
  return Object.fromEntries(placesOf(run).map((agent) => [agent, { ...zeroUsage }]));
}

export function key(runId: string): { pk: string; sk: string } {
  return { pk: `run#${runId}`, sk: 'run' };
}

/** The index attributes of a run with an owner: listed by owner and tenant, counted while it runs. */
export function indexKeys(run: Run, runOwner: Owner): Record<string, string> {
  const owner = ownerKey(runOwner);
  return {
    [runIndexes.byOwner.partitionKey]: `${itemFamilies.byOwner}${owner}`,
    [runIndexes.byTenant.partitionKey]: `${itemFamilies.byTenant}${runOwner.tenant ?? ''}`,
    ...(run.status === 'running' ? { [runningAttribute]: `${itemFamilies.running}${owner}` } : {}),
    [runIndexes.byOwner.sortKey]: `${run.createdAt}#${run.runId}`,
    goalPreview: run.goal.slice(0, summaryGoalChars),
  };
}

/** The index a listing reads, and the partition it reads in it. */
export function indexFor(query: RunQuery): { index: (typeof runIndexes)[keyof typeof runIndexes]; partition: string } {
  if ('owner' in query.scope) {
    const owner = ownerKey(query.scope.owner);
    return query.status === 'running'
      ? { index: runIndexes.running, partition: `${itemFamilies.running}${owner}` }
      : { index: runIndexes.byOwner, partition: `${itemFamilies.byOwner}${owner}` };
  }
  return { index: runIndexes.byTenant, partition: `${itemFamilies.byTenant}${query.scope.tenant ?? ''}` };
}

/** A page's end as an opaque cursor. */
export function encodeCursor(lastKey: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(lastKey)).toString('base64url');
}

/** A cursor back into a start key: only one this listing could have made (same index, same partition). */
export function decodeCursor(cursor: string, partitionKey: string, partition: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursor('The cursor is not one a previous page returned.');
  }
  const valid =
    typeof parsed === 'object' &&
    parsed !== null &&
    !Array.isArray(parsed) &&
    Object.values(parsed).every((v) => typeof v === 'string' && v.length <= 2048) &&
    (parsed as Record<string, string>)[partitionKey] === partition &&
    Object.keys(parsed).length <= 4;
  if (!valid) throw new InvalidCursor('The cursor is not one a previous page of this listing returned.');
  return parsed as Record<string, string>;
}

/** A run's spend of one UTC day: the top-level number `spent#<yyyy-mm-dd>` on its record (see `recordStep`). */
export const spentPrefix = 'spent#';

/** The days of a stored run item's own spend, by day. */
export function spentByDayOf(item: Record<string, unknown>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(item)
      .filter(([name, value]) => name.startsWith(spentPrefix) && typeof value === 'number')
      .map(([name, value]) => [name.slice(spentPrefix.length), value as number]),
  );
}

/** A run's totals from the attributes an update that added to them answered (`UPDATED_NEW`). */
export function totalsOf(totals: Record<string, unknown>): RunTotals {
  const spentByDay = spentByDayOf(totals);
  return {
    ...(Object.keys(spentByDay).length ? { spentByDay } : {}),
    usage: {
      inputTokens: Number(totals.inputTokens ?? 0),
      outputTokens: Number(totals.outputTokens ?? 0),
      cacheReadInputTokens: Number(totals.cacheReadInputTokens ?? 0),
      cacheCreationInputTokens: Number(totals.cacheCreationInputTokens ?? 0),
    },
    // A step adds to the live cost (`recordStep`); the listed one is a copy made at status changes.
    estimatedCostUsd: Number(totals[progressAttributes.cost] ?? totals.estimatedCostUsd ?? 0),
    ...(totals.childCostUsd !== undefined ? { childCostUsd: Number(totals.childCostUsd) } : {}),
  };
}

/** The later of two ISO times (the listed `updatedAt` and a step's `steppedAt`); either may be missing. */
export function latestOf(listed: unknown, stepped: unknown): string | undefined {
  const times = [listed, stepped].filter((time): time is string => typeof time === 'string');
  return times.sort().at(-1);
}
