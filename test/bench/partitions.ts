/**
 * Which DynamoDB partitions a request writes, table and indexes, for the load simulation
 * (`npm run bench -- --load N`) and for the tests that hold a step to its own partition.
 *
 * A write to the table writes its item's partition (`pk`). It writes an index too when it changes
 * an attribute that index holds: the index's keys, or an attribute it projects
 * (`listedAttributes`), in the item's index partition. An UpdateItem's body does not say which
 * index partition its item is in, so an `IndexWrites` tracker remembers each item's index keys
 * from the write that set them (a run record's PutItem).
 */
import { listedAttributes, runIndexes } from '../../functions/adapters/dynamo/layout.js';

/** The top-level attributes an UpdateExpression writes (SET, ADD, REMOVE, DELETE targets), names resolved. */
export function writtenAttributes(updateExpression: string, names: Record<string, string> = {}): string[] {
  const written = new Set<string>();
  // Clauses start at a keyword outside parentheses: SET a = if_not_exists(b, c) + :v, d = :w ADD e :x REMOVE f
  const clauses = updateExpression.split(/\b(SET|ADD|REMOVE|DELETE)\b/i).slice(1);
  for (let i = 0; i + 1 < clauses.length; i += 2) {
    const keyword = (clauses[i] ?? '').toUpperCase();
    for (const action of topLevel(clauses[i + 1] ?? '')) {
      const target = (keyword === 'SET' ? action.split('=')[0] : action.trim().split(/\s+/)[0]) ?? '';
      const first = target.trim().split(/[.[]/)[0] ?? '';
      if (first) written.add(names[first] ?? first);
    }
  }
  return [...written];
}

/** The comma-separated actions of a clause, commas inside parentheses kept. */
function topLevel(clause: string): string[] {
  const actions: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of clause) {
    if (char === '(') depth++;
    if (char === ')') depth--;
    if (char === ',' && depth === 0) {
      actions.push(current);
      current = '';
    } else current += char;
  }
  if (current.trim()) actions.push(current);
  return actions;
}

/** The attributes a write to a run index's item changes there: its keys and what it projects. */
const indexedAttributes = new Set([...listedAttributes, ...Object.values(runIndexes).flatMap((index) => [index.partitionKey, index.sortKey])]);

/** The written attributes an index holds (none: the write stays on the table). */
export function indexedOf(attributes: string[]): string[] {
  return attributes.filter((name) => indexedAttributes.has(name));
}

/** One DynamoDB request, as the emulator received it: the operation and its JSON body. */
export interface WireRequest {
  operation: string;
  body: string;
  /** Whether the write was done (a refused condition writes no index). */
  ok: boolean;
}

/**
 * A partition a write landed in: `table` or an index name, and its partition key value. An index
 * write is `lifecycle` when its run started, changed status or phase, or left the running runs
 * (a few per run), `step` otherwise (any other listed attribute: once per step, before issue 37).
 */
export interface PartitionWrite {
  where: string;
  partition: string;
  kind?: 'lifecycle' | 'step';
}

/** The attributes whose change is a run's lifecycle: its status, its phase, its leaving the running runs. */
const lifecycleAttributes = new Set(['status', 'phase', runIndexes.running.partitionKey]);

type Value = { S?: string; N?: string };

/** Tracks the index keys of items and answers the partitions each write lands in. */
export class IndexWrites {
  private readonly keysOf = new Map<string, Record<string, string>>();

  /** The partitions a request writes: its item's, and each index partition it changes (none for reads). */
  writes(request: WireRequest): PartitionWrite[] {
    const body = JSON.parse(request.body) as {
      Item?: Record<string, Value>;
      Key?: Record<string, Value>;
      UpdateExpression?: string;
      ExpressionAttributeNames?: Record<string, string>;
    };
    if (request.operation === 'PutItem' && body.Item) return this.put(body.Item, request.ok);
    if (request.operation === 'UpdateItem' && body.Key) return this.update(body.Key, body.UpdateExpression ?? '', body.ExpressionAttributeNames, request.ok);
    if (request.operation === 'DeleteItem' && body.Key) return [{ where: 'table', partition: body.Key.pk?.S ?? '?' }];
    return [];
  }

  private put(item: Record<string, Value>, ok: boolean): PartitionWrite[] {
    const pk = item.pk?.S ?? '?';
    const writes: PartitionWrite[] = [{ where: 'table', partition: pk }];
    if (!ok) return writes;
    const keys: Record<string, string> = {};
    for (const index of Object.values(runIndexes)) {
      const value = item[index.partitionKey]?.S;
      if (value === undefined) continue;
      keys[index.partitionKey] = value;
      writes.push({ where: index.name, partition: value, kind: 'lifecycle' });
    }
    if (Object.keys(keys).length) this.keysOf.set(pk, keys);
    return writes;
  }

  private update(key: Record<string, Value>, expression: string, names: Record<string, string> | undefined, ok: boolean): PartitionWrite[] {
    const pk = key.pk?.S ?? '?';
    const writes: PartitionWrite[] = [{ where: 'table', partition: pk }];
    const keys = this.keysOf.get(pk);
    if (!ok || !keys) return writes;
    const written = indexedOf(writtenAttributes(expression, names));
    if (written.length === 0) return writes;
    const kind = written.some((name) => lifecycleAttributes.has(name)) ? 'lifecycle' : 'step';
    for (const index of Object.values(runIndexes)) {
      const partition = keys[index.partitionKey];
      if (partition === undefined) continue;
      writes.push({ where: index.name, partition, kind });
      // Removing the index key takes the item out of that index (the running runs' at a run's end).
      if (written.includes(index.partitionKey) && /\bREMOVE\b/i.test(expression)) delete keys[index.partitionKey];
    }
    return writes;
  }
}

/** Per place (table, each index): the busiest partition, its writes and its busiest second. */
export interface Busiest {
  where: string;
  partition: string;
  writes: number;
  /** Of `writes`, those of runs' lifecycles and those of steps (index writes only). */
  lifecycle: number;
  step: number;
  peakPerSecond: number;
}

/** The busiest partition of each place, from timed writes (ms). */
export function busiestPartitions(writes: (PartitionWrite & { at: number })[]): Busiest[] {
  const byPlace = new Map<string, Map<string, (PartitionWrite & { at: number })[]>>();
  for (const write of writes) {
    const partitions = byPlace.get(write.where) ?? new Map<string, (PartitionWrite & { at: number })[]>();
    byPlace.set(write.where, partitions);
    const list = partitions.get(write.partition) ?? [];
    list.push(write);
    partitions.set(write.partition, list);
  }
  return [...byPlace].map(([where, partitions]) => {
    let best: Busiest = { where, partition: '', writes: 0, lifecycle: 0, step: 0, peakPerSecond: 0 };
    for (const [partition, list] of partitions) {
      if (list.length <= best.writes) continue;
      const perSecond = new Map<number, number>();
      for (const { at } of list) perSecond.set(Math.floor(at / 1000), (perSecond.get(Math.floor(at / 1000)) ?? 0) + 1);
      const count = (kind: PartitionWrite['kind']) => list.filter((w) => w.kind === kind).length;
      best = { where, partition, writes: list.length, lifecycle: count('lifecycle'), step: count('step'), peakPerSecond: Math.max(...perSecond.values()) };
    }
    return best;
  });
}
