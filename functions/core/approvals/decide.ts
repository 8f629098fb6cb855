/**
 * A reviewer's decision: checked (an edited input against the tool's own schema), recorded once,
 * then the waiting loop is woken.
 */
import { builtinTool } from '../tools/builtin/builtin.js';
import { errorIssues, validatorOf } from '../tools/json-schema.js';
import { type ToolCatalogStore } from '../tools/external/types.js';
import {
  type Approval,
  ApprovalAlreadyDecided,
  ApprovalNotFound,
  type ApprovalStore,
  type DecisionBody,
  type DecisionRecorded,
  InvalidEditedInput,
  RunNotRunning,
  type TaskTokens,
} from './types.js';
import { notesOf } from './views.js';
import { now } from './request.js';

function invalidEdit(issues: { path: string; message: string }[]): InvalidEditedInput {
  return new InvalidEditedInput(`The edited input does not fit the tool's schema: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
}

/**
 * Checks an edited input against the tool's own schema: a built-in tool's zod schema (the one the
 * model's JSON Schema is made from), or the JSON Schema of an external tool as the run's catalog
 * lists it (what the model was offered). The input as parsed, or `InvalidEditedInput` naming the
 * fields; an input no schema can check is refused, never run unchecked.
 */
export async function checkEditedInput(
  approval: Pick<Approval, 'runId' | 'agent' | 'name'>,
  input: Record<string, unknown>,
  catalogs?: Pick<ToolCatalogStore, 'getCatalog'>,
): Promise<Record<string, unknown>> {
  const tool = builtinTool(approval.name);
  if (tool) {
    const parsed = tool.input.safeParse(input);
    if (!parsed.success) throw invalidEdit(parsed.error.issues.map((i) => ({ path: ['input', ...i.path].join('.'), message: i.message })));
    return parsed.data as Record<string, unknown>;
  }
  const catalog = await catalogs?.getCatalog(approval.runId);
  // The call was gated, so the agent was offered the tool (the tool step runs only an agent's own tools).
  const external = catalog?.tools.find((t) => t.name === approval.name);
  if (!external) throw invalidEdit([{ path: 'input', message: `${approval.name} is not a tool this run offers; its input cannot be edited` }]);
  let validate: ReturnType<typeof validatorOf>;
  try {
    validate = validatorOf(external.inputSchema);
  } catch {
    throw invalidEdit([{ path: 'input', message: `the input schema of ${approval.name} cannot be checked here, so its input cannot be edited` }]);
  }
  if (!validate(input)) throw invalidEdit(errorIssues(validate.errors ?? [], 'input'));
  return input;
}

/**
 * A reviewer's decision: recorded once, then the waiting loop is woken. Deciding twice, an
 * unknown call, or a run that has ended are refused with named errors.
 */
export async function decideApproval(
  run: { runId: string; status: string },
  toolUseId: string,
  body: DecisionBody,
  decidedBy: string,
  deps: {
    approvals: ApprovalStore;
    tokens: TaskTokens;
    /** Runs' external tool catalogs, whose input schemas check an edited input of an MCP or Lambda tool. */
    catalogs?: Pick<ToolCatalogStore, 'getCatalog'>;
    clock?: () => Date;
  },
): Promise<DecisionRecorded> {
  if (run.status !== 'running') {
    throw new RunNotRunning(`Run ${run.runId} is ${run.status}; approvals can be decided only while it runs.`);
  }
  const existing = await deps.approvals.get(run.runId, toolUseId);
  if (!existing) throw new ApprovalNotFound(`Run ${run.runId} has no approval request for tool call ${toolUseId}.`);
  if (existing.decision) {
    // The earlier decision stands. Wake the loop again in case that wake-up was lost.
    await wake(existing, deps.tokens).catch(() => undefined);
    throw alreadyDecided(existing);
  }
  let editedInput: Record<string, unknown> | undefined;
  if (body.input !== undefined) editedInput = await checkEditedInput(existing, body.input, deps.catalogs);
  const { recorded, approval } = await deps.approvals.decide(run.runId, toolUseId, {
    decision: body.decision,
    decidedAt: now(deps.clock),
    decidedBy,
    ...(body.reason ? { reason: body.reason } : {}),
    ...(body.message ? { message: body.message } : {}),
    ...(editedInput ? { editedInput } : {}),
  });
  if (!approval) throw new ApprovalNotFound(`Run ${run.runId} has no approval request for tool call ${toolUseId}.`);
  if (!recorded) throw alreadyDecided(approval);
  // Without a token the loop has not started waiting yet; it reads the decision when it does.
  await wake(approval, deps.tokens);
  return {
    runId: run.runId,
    toolUseId,
    decision: body.decision,
    ...notesOf(approval),
    decidedAt: approval.decidedAt ?? '',
    // Stryker disable next-line LogicalOperator: the store answers the decision as recorded, decidedBy included; the fallback only satisfies the type
    decidedBy: approval.decidedBy ?? decidedBy,
  };
}

async function wake(approval: Approval, tokens: TaskTokens): Promise<void> {
  if (!approval.token || !approval.decision) return;
  await tokens.resume(approval.token, { decision: approval.decision, ...(approval.reason ? { reason: approval.reason } : {}) });
}

function alreadyDecided(approval: Approval): ApprovalAlreadyDecided {
  const by = approval.decidedBy === 'timeout' ? ' (no decision in time)' : approval.reason ? ` (${approval.reason})` : '';
  return new ApprovalAlreadyDecided(
    `Tool call ${approval.toolUseId} of run ${approval.runId} was already decided: ${approval.decision}${by} at ${approval.decidedAt}.`,
  );
}
