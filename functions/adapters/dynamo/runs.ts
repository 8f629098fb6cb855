/**
 * Run records on DynamoDB: `pk = run#<runId>`, `sk = run`. Usage counters are top-level numbers
 * so a step can `ADD` to them; a string set of counted steps makes that addition happen once.
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AgentName } from '../../core/names.js';
import { Run, type RunStore, type StepOutcome } from '../../core/runs.js';
import { type Usage, zeroUsage } from '../../core/messages.js';
import type { Plan } from '../../core/plan.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import type { BlobStore } from '../s3/blobs.js';

/** Goals larger than this are kept in S3 so no run item nears DynamoDB's 400 KB item limit. */
const inlineGoalBytes = 32 * 1024;

export interface DynamoRunOptions {
  doc: DynamoDBDocumentClient;
  table: string;
  blobs: BlobStore;
  clock?: () => Date;
}

export class DynamoRunStore implements RunStore {
  private readonly clock: () => Date;

  constructor(private readonly options: DynamoRunOptions) {
    this.clock = options.clock ?? (() => new Date());
  }

  async get(runId: string): Promise<Run | undefined> {
    const out = await guard('Reading a run', () =>
      this.options.doc.send(
        new GetCommand({ TableName: this.options.table, Key: key(runId), ConsistentRead: true }),
      ),
    );
    if (!out.Item) return undefined;
    const { goalRef, inputTokens, outputTokens, cacheReadInputTokens, cacheCreationInputTokens, countedSteps: _counted, ...rest } =
      out.Item;
    const goal = typeof goalRef === 'string' ? await this.options.blobs.get(goalRef) : rest.goal;
    return Run.parse({
      ...rest,
      goal,
      usage: {
        inputTokens: inputTokens ?? 0,
        outputTokens: outputTokens ?? 0,
        cacheReadInputTokens: cacheReadInputTokens ?? 0,
        cacheCreationInputTokens: cacheCreationInputTokens ?? 0,
      },
    });
  }

  async create(run: Run): Promise<boolean> {
    const { usage, goal, usageByAgent: _byAgent, estimatedCostUsd: _cost, ...rest } = Run.parse(run);
    const goalField =
      Buffer.byteLength(goal, 'utf8') > inlineGoalBytes
        ? { goalRef: await this.options.blobs.put(`runs/${encodeURIComponent(run.runId)}/goal`, goal) }
        : { goal };
    try {
      await guard('Creating a run', () =>
        this.options.doc.send(
          new PutCommand({
            TableName: this.options.table,
            // Each agent's counters exist from the start, so a step can ADD to them in place.
            Item: { ...key(run.runId), ...rest, ...goalField, ...usage, usageByAgent: usageMaps(run.mode), estimatedCostUsd: 0 },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        ),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  async recordStep(runId: string, agent: AgentName, iteration: number, { usage, costUsd, result }: StepOutcome): Promise<void> {
    const step = `${agent}#${iteration}`;
    try {
      await guard('Recording a step', () =>
        this.options.doc.send(
          new UpdateCommand({
            TableName: this.options.table,
            Key: key(runId),
            UpdateExpression:
              'ADD inputTokens :in, outputTokens :out, cacheReadInputTokens :cr, cacheCreationInputTokens :cw, countedSteps :step, ' +
              '#byAgent.#agent.inputTokens :in, #byAgent.#agent.outputTokens :out, ' +
              '#byAgent.#agent.cacheReadInputTokens :cr, #byAgent.#agent.cacheCreationInputTokens :cw, estimatedCostUsd :cost ' +
              `SET iterations.#agent = :iterations, updatedAt = :now${result ? ', #result = :result' : ''}`,
            ConditionExpression: 'attribute_exists(pk) AND NOT contains(countedSteps, :stepName)',
            ExpressionAttributeNames: { '#agent': agent, '#byAgent': 'usageByAgent', ...(result ? { '#result': 'result' } : {}) },
            ExpressionAttributeValues: {
              ':in': usage.inputTokens,
              ':out': usage.outputTokens,
              ':cr': usage.cacheReadInputTokens,
              ':cw': usage.cacheCreationInputTokens,
              ':cost': costUsd ?? 0,
              ':step': new Set([step]),
              ':stepName': step,
              ':iterations': iteration + 1,
              ':now': this.clock().toISOString(),
              ...(result ? { ':result': result } : {}),
            },
          }),
        ),
      );
    } catch (error) {
      // Already counted (a retried step), or no such run: either way there is nothing to add.
      if (!isConditionFailed(error)) throw error;
    }
  }

  async savePlan(runId: string, plan: Plan): Promise<void> {
    await guard('Storing a plan', () =>
      this.options.doc.send(
        new UpdateCommand({
          TableName: this.options.table,
          Key: key(runId),
          UpdateExpression: 'SET #plan = :plan, updatedAt = :now',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#plan': 'plan' },
          ExpressionAttributeValues: { ':plan': plan, ':now': this.clock().toISOString() },
        }),
      ),
    );
  }

  async cancel(runId: string): Promise<boolean> {
    try {
      await guard('Cancelling a run', () =>
        this.options.doc.send(
          new UpdateCommand({
            TableName: this.options.table,
            Key: key(runId),
            UpdateExpression: 'SET #status = :cancelled, #phase = :cancelled, updatedAt = :now REMOVE currentAgent',
            ConditionExpression: '#status = :running',
            ExpressionAttributeNames: { '#status': 'status', '#phase': 'phase' },
            ExpressionAttributeValues: { ':cancelled': 'cancelled', ':running': 'running', ':now': this.clock().toISOString() },
          }),
        ),
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
  ): Promise<void> {
    const names: Record<string, string> = { '#status': 'status', '#phase': 'phase' };
    const values: Record<string, unknown> = {
      ':status': outcome.status,
      ':phase': outcome.phase,
      ':now': this.clock().toISOString(),
    };
    let expression = 'SET #status = :status, #phase = :phase, updatedAt = :now';
    for (const field of ['result', 'error'] as const) {
      if (outcome[field] === undefined) continue;
      names[`#${field}`] = field;
      values[`:${field}`] = outcome[field];
      expression += `, #${field} = :${field}`;
    }
    await guard('Finishing a run', () =>
      this.options.doc.send(
        new UpdateCommand({
          TableName: this.options.table,
          Key: key(runId),
          UpdateExpression: expression,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      ),
    );
  }
}

function usageMaps(mode: Run['mode']): Partial<Record<AgentName, Usage>> {
  const agents: AgentName[] = mode === 'single' ? ['single'] : ['architect', 'coder'];
  return Object.fromEntries(agents.map((agent) => [agent, { ...zeroUsage }]));
}

function key(runId: string): { pk: string; sk: string } {
  return { pk: `run#${runId}`, sk: 'run' };
}
