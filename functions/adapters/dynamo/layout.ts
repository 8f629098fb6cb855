/**
 * The table's layout, shared by the adapters, the CDK storage construct and the local emulator,
 * so the three cannot drift. One table, item families by partition key prefix:
 *
 *   conv#<conversationId>   messages, compactions                 (conversations.ts)
 *   run#<runId>             the run record, approvals, tool catalog (runs.ts, approvals.ts, tool-catalog.ts)
 *   idem#<ownerKey>:<key>   idempotency keys                      (intake.ts)
 *   session#<ownerKey>/<id> session locks                         (intake.ts)
 *   spend#<ownerKey>#<day>  what each run of an owner spent that day (spend.ts)
 *   slot#<ownerKey>         the slots of an owner's running runs, the quota (run-slots.ts)
 *   stream#<ownerKey>       the slots of an owner's open event streams (run-slots.ts)
 *   live#<runId>            the answers being generated, per model call (adapters/dynamo/live-text.ts)
 *   agent#<name>            the versions of an agent definition runs follow (agents.ts)
 *   schedule#<tenantKey>    schedules, sorted by owner (schedules.ts)
 *   eval#<ownerKey>         an owner's deployed evals, one item each (evals.ts)
 *
 * and three indexes over run records, each keyed by a prefix of its own, so IAM can tell them
 * apart (`dynamodb:LeadingKeys`): runs by owner, by tenant, and the running runs of an owner
 * (sparse: the attribute is removed when the run ends).
 */

/** The partition key prefixes of the item families, as IAM conditions name them. */
export const itemFamilies = {
  conversations: 'conv#',
  runs: 'run#',
  idempotency: 'idem#',
  sessions: 'session#',
  spend: 'spend#',
  live: 'live#',
  agents: 'agent#',
  schedules: 'schedule#',
  evals: 'eval#',
  slots: 'slot#',
  streams: 'stream#',
  byOwner: 'owner#',
  byTenant: 'tenant#',
  running: 'running#',
} as const;
export type ItemFamily = keyof typeof itemFamilies;

/**
 * Attributes a listing shows, projected into the run indexes. A write that changes one of them
 * writes every index the run is in, in the partition of its owner or tenant: only a run's start,
 * its status and phase changes and its end may (docs/SCALE.md, "Hot partitions"); a step writes
 * `progressAttributes` instead.
 */
export const listedAttributes = ['runId', 'mode', 'goalPreview', 'status', 'phase', 'createdAt', 'updatedAt', 'estimatedCostUsd', 'approvals', 'owner'];

/**
 * What a step writes where the listed `estimatedCostUsd` and `updatedAt` would be: the run's cost
 * so far and the time of its latest step, on the run record only (no index projects them). Every
 * status change copies the cost into `estimatedCostUsd`; a reader takes the newer of each pair.
 */
export const progressAttributes = { cost: 'liveCostUsd', steppedAt: 'steppedAt' } as const;

/**
 * The update that brings the listed cost up to the live one, for the SET clause of every status
 * change (the adapters' and the orchestrator's); a record no step has counted yet keeps its own.
 */
export const copyLiveCost = `estimatedCostUsd = if_not_exists(${progressAttributes.cost}, estimatedCostUsd)`;

/** The run indexes: name, partition key attribute and its family, sort key attribute (newest first). */
export const runIndexes = {
  byOwner: { name: 'runs-by-owner', partitionKey: 'ownerKey', family: 'byOwner', sortKey: 'listKey' },
  byTenant: { name: 'runs-by-tenant', partitionKey: 'tenantKey', family: 'byTenant', sortKey: 'listKey' },
  running: { name: 'running-by-owner', partitionKey: 'runningKey', family: 'running', sortKey: 'listKey' },
} as const satisfies Record<string, { name: string; partitionKey: string; family: ItemFamily; sortKey: string }>;

/** The attribute that, when removed, takes a run out of the running index (the orchestrator's updates name it too). */
export const runningAttribute = runIndexes.running.partitionKey;
