/**
 * Approval records on DynamoDB, beside the run record in its partition, so one query lists a
 * run's approvals:
 *
 *   pk = run#<runId>, sk = approval#<toolUseId>   { name, input, requestedAt, token?, decision?, … }
 *
 * Every write is conditional: a record is opened once, a token is stored only while undecided,
 * and a decision is recorded once.
 */
import type { Documents } from './documents.js';
import { Approval, type ApprovalStore, type RunApprovals } from '../../core/approvals/types.js';
import { policyTools } from '../../core/approvals/policy.js';
import { guard, isConditionFailed } from '../aws/errors.js';
import { queryAll } from './conversations.js';

/** Runs whose approval lists are remembered (they never change after a run is created). */
const cachedPolicies = 500;

export class DynamoApprovalStore implements ApprovalStore {
  private readonly policies = new Map<string, RunApprovals>();

  constructor(
    private readonly doc: Documents,
    private readonly table: string,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async toolsFor(runId: string): Promise<readonly string[]> {
    return policyTools(await this.policyFor(runId));
  }

  async policyFor(runId: string): Promise<RunApprovals> {
    const cached = this.policies.get(runId);
    if (cached) return cached;
    const out = await guard('Reading a run\'s approval list', () =>
      this.doc.get({
        TableName: this.table,
        Key: { pk: `run#${runId}`, sk: 'run' },
        ProjectionExpression: 'approvals',
        ConsistentRead: true,
      }),
    );
    if (!out.Item) return { tools: [] };
    const stored = (out.Item.approvals ?? {}) as Partial<RunApprovals>;
    const policy = { tools: stored.tools ?? [], ...(stored.rules ? { rules: stored.rules } : {}), ...(stored.layers ? { layers: stored.layers } : {}) };
    if (this.policies.size >= cachedPolicies) this.policies.delete(this.policies.keys().next().value as string);
    this.policies.set(runId, policy);
    return policy;
  }

  async get(runId: string, toolUseId: string): Promise<Approval | undefined> {
    const out = await guard('Reading an approval', () =>
      this.doc.get({ TableName: this.table, Key: key(runId, toolUseId), ConsistentRead: true }),
    );
    return out.Item ? Approval.parse(out.Item) : undefined;
  }

  async list(runId: string): Promise<Approval[]> {
    const items = await queryAll(
      this.doc,
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': `run#${runId}`, ':prefix': 'approval#' },
        ConsistentRead: true,
      },
      'Listing approvals',
    );
    return items.map((item) => Approval.parse(item));
  }

  async open(approval: Approval): Promise<Approval> {
    try {
      await guard('Opening an approval', () =>
        this.doc.put({
          TableName: this.table,
          Item: { ...key(approval.runId, approval.toolUseId), ...Approval.parse(approval) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return approval;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const standing = await this.get(approval.runId, approval.toolUseId);
      if (!standing) throw new Error(`Approval ${approval.toolUseId} of run ${approval.runId} vanished while it was opened.`);
      return standing;
    }
  }

  async attachToken(runId: string, toolUseId: string, token: string): Promise<'attached' | 'decided' | 'missing'> {
    try {
      await guard('Storing an approval token', () =>
        this.doc.update({
          TableName: this.table,
          Key: key(runId, toolUseId),
          UpdateExpression: 'SET #token = :token, tokenAt = :now',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#decision)',
          ExpressionAttributeNames: { '#token': 'token', '#decision': 'decision' },
          ExpressionAttributeValues: { ':token': token, ':now': this.clock().toISOString() },
        }),
      );
      return 'attached';
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return (await this.get(runId, toolUseId)) ? 'decided' : 'missing';
    }
  }

  async decide(
    runId: string,
    toolUseId: string,
    decision: Required<Pick<Approval, 'decision' | 'decidedAt' | 'decidedBy'>> & Pick<Approval, 'reason' | 'message' | 'editedInput'>,
  ): Promise<{ recorded: boolean; approval: Approval | undefined }> {
    const optional = (['reason', 'message', 'editedInput'] as const).filter((name) => decision[name] !== undefined);
    try {
      const out = await guard('Recording a decision', () =>
        this.doc.update({
          TableName: this.table,
          Key: key(runId, toolUseId),
          UpdateExpression: `SET #decision = :decision, decidedAt = :at, decidedBy = :by${optional.map((name) => `, #${name} = :${name}`).join('')}`,
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#decision)',
          ExpressionAttributeNames: { '#decision': 'decision', ...Object.fromEntries(optional.map((name) => [`#${name}`, name])) },
          ExpressionAttributeValues: {
            ':decision': decision.decision,
            ':at': decision.decidedAt,
            ':by': decision.decidedBy,
            ...Object.fromEntries(optional.map((name) => [`:${name}`, decision[name]])),
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { recorded: true, approval: Approval.parse(out.Attributes) };
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return { recorded: false, approval: await this.get(runId, toolUseId) };
    }
  }
}

function key(runId: string, toolUseId: string): { pk: string; sk: string } {
  return { pk: `run#${runId}`, sk: `approval#${toolUseId}` };
}
