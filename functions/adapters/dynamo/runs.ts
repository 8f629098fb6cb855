/**
 * Run records on DynamoDB: `pk = run#<runId>`, `sk = run`. Usage counters are top-level numbers
 * so a step can `ADD` to them; a string set of counted steps makes that addition happen once.
 * An output schema and a structured answer are kept as JSON text (`outputSchema`,
 * `result.outputJson`): their bytes stay as given (the schema is sent to the model on every step)
 * and no nesting depth limit of DynamoDB maps applies.
 */
import type { Documents } from './documents.js';
import { Approval } from '../../core/approvals/types.js';
import { type Owner } from '../../core/callers/types.js';
import { ownerKey } from '../../core/callers/access.js';
import type { AgentName } from '../../core/agents/types.js';
import { Run, type RunError, type RunPage, type RunQuery, type RunStore, type RunTotals, type StepOutcome } from '../../core/runs/types.js';
import type { Plan } from '../../core/plan/types.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import type { BlobStore } from '../s3/blobs.js';
import { queryAll } from './conversations.js';
import { copyLiveCost, itemFamilies, progressAttributes, runIndexes, runningAttribute } from './layout.js';
import { listRuns } from './run-listing.js';
import { fromStoredResult, indexKeys, key, latestOf, spentByDayOf, spentPrefix, toStoredResult, totalsOf, usageMaps } from './run-items.js';

/** Goals larger than this are kept in S3 so no run item nears DynamoDB's 400 KB item limit. */
const inlineGoalBytes = 32 * 1024;

/** Goals kept in S3 that a process remembers (a goal never changes). */
const cachedGoals = 100;

export interface DynamoRunOptions {
  doc: Documents;
  table: string;
  blobs: BlobStore;
  clock?: () => Date;
}

/** A step's addition to the run's live cost (`:cost`), and its time (`:now`): the progress a step writes instead of the listed attributes. */
const liveCost = `${progressAttributes.cost} = if_not_exists(${progressAttributes.cost}, estimatedCostUsd) + :cost`;
const steppedAt = `${progressAttributes.steppedAt} = :now`;

/** Each agent's counted mark on the run record: `counted#<agent>`, the last call whose usage was added (see `recordStep`). */
const countedPrefix = 'counted#';

export class DynamoRunStore implements RunStore {
  private readonly clock: () => Date;

  constructor(private readonly options: DynamoRunOptions) {
    this.clock = options.clock ?? (() => new Date());
  }

  async get(runId: string): Promise<Run | undefined> {
    const out = await guard('Reading a run', () =>
      this.options.doc.get({ TableName: this.options.table, Key: key(runId), ConsistentRead: true }),
    );
    return out.Item ? this.toRun(out.Item) : undefined;
  }

  /**
   * The run record and every approval of the run in one Query of its partition (the event
   * stream's read of it: docs/events.md, "Read order, and why it is safe"); the tool catalog, which sorts
   * after the record, is not read.
   */
  async getWithApprovals(runId: string): Promise<{ run: Run | undefined; approvals: Approval[] }> {
    const items = await queryAll(
      this.options.doc,
      {
        TableName: this.options.table,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': key(runId).pk, ':from': 'approval#', ':to': 'run' },
        ConsistentRead: true,
      },
      'Reading a run and its approvals',
    );
    const record = items.find((item) => item.sk === 'run');
    const approvals = items
      .filter((item) => typeof item.sk === 'string' && item.sk.startsWith('approval#'))
      // Fields a newer decision may carry are kept (loose); the task token stays here.
      .map(({ pk: _pk, sk: _sk, token: _token, ...item }) => Approval.loose().parse(item));
    return { run: record ? await this.toRun(record) : undefined, approvals };
  }

  /** A stored run item as a run; a goal kept in S3 is read once per process (it never changes). */
  private async toRun(item: Record<string, unknown>): Promise<Run> {
    const {
      goalRef,
      inputTokens,
      outputTokens,
      cacheReadInputTokens,
      cacheCreationInputTokens,
      countedSteps: _counted,
      ownerKey: _owner,
      tenantKey: _tenant,
      runningKey: _running,
      listKey: _list,
      goalPreview: _preview,
      liveCostUsd,
      steppedAt,
      outputSchema,
      result,
      agentResults,
      ...rest
    } = item;
    for (const name of Object.keys(rest)) if (name.startsWith(countedPrefix)) delete rest[name];
    const spentByDay = spentByDayOf(rest);
    for (const name of Object.keys(spentByDay)) delete rest[`${spentPrefix}${name}`];
    let goal = rest.goal;
    if (typeof goalRef === 'string') {
      goal = this.goals.get(goalRef) ?? (await this.options.blobs.get(goalRef));
      if (this.goals.size >= cachedGoals) this.goals.delete(this.goals.keys().next().value as string);
      this.goals.set(goalRef, goal as string);
    }
    return Run.parse({
      ...rest,
      goal,
      // The live figures a step writes, where it has written them (see `recordStep`).
      ...(typeof liveCostUsd === 'number' ? { estimatedCostUsd: liveCostUsd } : {}),
      updatedAt: latestOf(rest.updatedAt, steppedAt),
      ...(typeof outputSchema === 'string' ? { output: { schema: JSON.parse(outputSchema) as unknown } } : {}),
      ...(result ? { result: fromStoredResult(result as Record<string, unknown>) } : {}),
      ...(agentResults && Object.keys(agentResults).length
        ? { agentResults: Object.fromEntries(Object.entries(agentResults as Record<string, Record<string, unknown>>).map(([place, r]) => [place, fromStoredResult(r)])) }
        : {}),
      ...(Object.keys(spentByDay).length ? { spentByDay } : {}),
      usage: {
        inputTokens: inputTokens ?? 0,
        outputTokens: outputTokens ?? 0,
        cacheReadInputTokens: cacheReadInputTokens ?? 0,
        cacheCreationInputTokens: cacheCreationInputTokens ?? 0,
      },
    });
  }

  private readonly goals = new Map<string, string>();

  async create(run: Run): Promise<boolean> {
    const { usage, goal, usageByAgent: _byAgent, estimatedCostUsd: _cost, output, ...rest } = Run.parse(run);
    const goalField =
      Buffer.byteLength(goal, 'utf8') > inlineGoalBytes
        ? { goalRef: await this.options.blobs.put(`runs/${encodeURIComponent(run.runId)}/goal`, goal) }
        : { goal };
    try {
      await guard('Creating a run', () =>
        this.options.doc.put({
          TableName: this.options.table,
          // Each agent's counters exist from the start, so a step can ADD to them in place.
          Item: {
            ...key(run.runId),
            ...rest,
            ...goalField,
            ...(output ? { outputSchema: JSON.stringify(output.schema) } : {}),
            ...usage,
            usageByAgent: usageMaps(run),
            // A workflow's agents hand their answers over in this map, set in place by each step.
            ...(run.agents?.some((agent) => (agent.step ?? 0) > 0) ? { agentResults: {} } : {}),
            // Child runs are recorded in this map, set in place by each call that starts one.
            ...(run.agents?.some((agent) => agent.callee) ? { children: {} } : {}),
            estimatedCostUsd: 0,
            ...(run.owner ? indexKeys(run, run.owner) : {}),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  async recordStep(runId: string, agent: AgentName, iteration: number, { usage, costUsd, result, call, handsOver, withChildren, day }: StepOutcome): Promise<RunTotals | undefined> {
    // Each call is counted once: an agent's steps run one after another, and within a step its
    // summary before its answer, so a mark that only grows (2 × iteration, + 1 for the answer)
    // tells a counted call from a new one in a few bytes, where a set of every counted step made
    // the item, and so the write's cost, grow with the run. Records from before the mark also
    // keep their set (`countedSteps`), still checked.
    // No attribute an index projects is written here (docs/SCALE.md, "Hot partitions"): the cost
    // goes to `liveCostUsd` (from the listed cost, on a record no step counted yet) and the time
    // to `steppedAt`, so a step writes its run's own partition and no owner's or tenant's.
    const step = call === 'summary' ? `${agent}#${iteration}#summary` : `${agent}#${iteration}`;
    const mark = iteration * 2 + (call === 'summary' ? 0 : 1);
    try {
      const updated = await guard('Recording a step', () =>
        this.options.doc.update({
          TableName: this.options.table,
          Key: key(runId),
          UpdateExpression:
            'ADD inputTokens :in, outputTokens :out, cacheReadInputTokens :cr, cacheCreationInputTokens :cw, ' +
            '#byAgent.#agent.inputTokens :in, #byAgent.#agent.outputTokens :out, ' +
            `#byAgent.#agent.cacheReadInputTokens :cr, #byAgent.#agent.cacheCreationInputTokens :cw${withChildren ? ', childCostUsd :zero' : ''}${day ? ', #spentDay :cost' : ''} ` +
            `SET #counted = :mark, iterations.#agent = :iterations, ${liveCost}, ${steppedAt}${result ? (handsOver ? ', agentResults.#agent = :result' : ', #result = :result') : ''}`,
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#counted) OR #counted < :mark) AND NOT contains(countedSteps, :stepName)',
          ExpressionAttributeNames: {
            '#agent': agent,
            '#byAgent': 'usageByAgent',
            '#counted': `${countedPrefix}${agent}`,
            ...(result && !handsOver ? { '#result': 'result' } : {}),
            // One top-level number per day (no map to create first), added to as the totals are.
            ...(day ? { '#spentDay': `${spentPrefix}${day}` } : {}),
          },
          ExpressionAttributeValues: {
            ':in': usage.inputTokens,
            ':out': usage.outputTokens,
            ':cr': usage.cacheReadInputTokens,
            ':cw': usage.cacheCreationInputTokens,
            ':cost': costUsd ?? 0,
            ':mark': mark,
            ':stepName': step,
            ':iterations': iteration + 1,
            ':now': this.clock().toISOString(),
            ...(result ? { ':result': toStoredResult(result) } : {}),
            ...(withChildren ? { ':zero': 0 } : {}),
          },
          // The totals after the addition, so a step checking its budget need not read them back.
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      return totalsOf(updated.Attributes ?? {});
    } catch (error) {
      // Already counted (a retried step), or no such run: either way there is nothing to add.
      if (!isConditionFailed(error)) throw error;
      return undefined;
    }
  }

  async savePlan(runId: string, plan: Plan): Promise<void> {
    await guard('Storing a plan', () =>
      this.options.doc.update({
        TableName: this.options.table,
        Key: key(runId),
        // A step's write: the time goes where no index projects it (see `recordStep`).
        UpdateExpression: `SET #plan = :plan, ${steppedAt}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#plan': 'plan' },
        ExpressionAttributeValues: { ':plan': plan, ':now': this.clock().toISOString() },
      }),
    );
  }

  async list(query: RunQuery): Promise<RunPage> {
    return listRuns(this.options.doc, this.options.table, query);
  }

  async countRunning(owner: Owner): Promise<number> {
    const index = runIndexes.running;
    return guard('Counting running runs', async () => {
      let count = 0;
      const pages = this.options.doc.pages({
        TableName: this.options.table,
        IndexName: index.name,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': index.partitionKey },
        ExpressionAttributeValues: { ':pk': `${itemFamilies.running}${ownerKey(owner)}` },
        Select: 'COUNT',
      });
      for await (const page of pages) count += page.Count;
      return count;
    });
  }

  async cancel(runId: string): Promise<boolean> {
    try {
      await guard('Cancelling a run', () =>
        this.options.doc.update({
          TableName: this.options.table,
          Key: key(runId),
          UpdateExpression: `SET #status = :cancelled, #phase = :cancelled, updatedAt = :now, ${copyLiveCost} REMOVE currentAgent, ${runningAttribute}`,
          ConditionExpression: '#status = :running',
          ExpressionAttributeNames: { '#status': 'status', '#phase': 'phase' },
          ExpressionAttributeValues: { ':cancelled': 'cancelled', ':running': 'running', ':now': this.clock().toISOString() },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  async failIfRunning(runId: string, error: RunError): Promise<boolean> {
    try {
      await guard('Failing a run', () =>
        this.options.doc.update({
          TableName: this.options.table,
          Key: key(runId),
          // As every terminal write: the run leaves the running index.
          UpdateExpression: `SET #status = :failed, #phase = :failed, #error = :error, updatedAt = :now, ${copyLiveCost} REMOVE currentAgent, ${runningAttribute}`,
          ConditionExpression: '#status = :running',
          ExpressionAttributeNames: { '#status': 'status', '#phase': 'phase', '#error': 'error' },
          ExpressionAttributeValues: { ':failed': 'failed', ':running': 'running', ':error': error, ':now': this.clock().toISOString() },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  async finish(
    runId: string,
    outcome: Pick<Run, 'status' | 'phase'> & Partial<Pick<Run, 'result' | 'error'>>,
    options: { ifRunning?: boolean } = {},
  ): Promise<boolean> {
    const names: Record<string, string> = { '#status': 'status', '#phase': 'phase' };
    const values: Record<string, unknown> = {
      ':status': outcome.status,
      ':phase': outcome.phase,
      ':now': this.clock().toISOString(),
    };
    // A status change: the listing's cost catches up with the steps' (see `recordStep`).
    let expression = `SET #status = :status, #phase = :phase, updatedAt = :now, ${copyLiveCost}`;
    for (const field of ['result', 'error'] as const) {
      if (outcome[field] === undefined) continue;
      names[`#${field}`] = field;
      values[`:${field}`] = outcome[field];
      expression += `, #${field} = :${field}`;
    }
    // An ended run leaves the running index, so it no longer counts against its owner's quota.
    if (outcome.status !== 'running') expression += ` REMOVE ${runningAttribute}`;
    if (options.ifRunning) values[':running'] = 'running';
    try {
      await guard('Finishing a run', () =>
        this.options.doc.update({
          TableName: this.options.table,
          Key: key(runId),
          UpdateExpression: expression,
          ...(options.ifRunning ? { ConditionExpression: '#status = :running' } : {}),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (options.ifRunning && isConditionFailed(error)) return false;
      throw error;
    }
  }

  async addChild(runId: string, toolUseId: string, child: { runId: string; agent: string }): Promise<void> {
    await guard('Recording a child run', () =>
      this.options.doc.update({
        TableName: this.options.table,
        Key: key(runId),
        // The map exists from the start on a run whose agents may call agents (create).
        UpdateExpression: 'SET children.#call = :child',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#call': toolUseId },
        ExpressionAttributeValues: { ':child': child },
      }),
    );
  }

  async markUntrusted(runId: string): Promise<void> {
    try {
      await guard('Marking a run as having taken in untrusted content', () =>
        this.options.doc.update({
          TableName: this.options.table,
          Key: key(runId),
          UpdateExpression: 'SET untrustedContent = :yes',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':yes': true },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
  }

  async rollUp(runId: string, toolUseId: string, spent: Pick<Run, 'usage'> & { estimatedCostUsd: number }): Promise<RunTotals | undefined> {
    const { usage } = spent;
    try {
      const updated = await guard('Adding a child run\'s spend', () =>
        this.options.doc.update({
          TableName: this.options.table,
          Key: key(runId),
          UpdateExpression:
            // A step's write, as `recordStep`'s: the cost goes where no index projects it.
            `ADD inputTokens :in, outputTokens :out, cacheReadInputTokens :cr, cacheCreationInputTokens :cw, childCostUsd :cost, rolledUp :call SET ${liveCost}`,
          ConditionExpression: 'attribute_exists(pk) AND NOT contains(rolledUp, :id)',
          ExpressionAttributeValues: {
            ':in': usage.inputTokens,
            ':out': usage.outputTokens,
            ':cr': usage.cacheReadInputTokens,
            ':cw': usage.cacheCreationInputTokens,
            ':cost': spent.estimatedCostUsd,
            ':call': new Set([toolUseId]),
            ':id': toolUseId,
          },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      return totalsOf(updated.Attributes ?? {});
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return undefined;
    }
  }
}
