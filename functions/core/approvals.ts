/**
 * Human approval of risky tool calls. A run names the tools that need a reviewer's yes; when the
 * model calls one of them, the loop pauses on that call until a person decides, or until the
 * wait times out, which counts as a denial with reason `timeout`.
 *
 * The approval record is the source of truth. The state machine's task token only wakes the
 * loop; the tool step applies whatever the record says. So a lost or stale token, a decision
 * that lands before the token is stored, or a retried request never loses a decision, and a
 * decision is recorded once (a conditional write), whoever tries second gets a 409.
 */
import { minimatch } from 'minimatch';
import * as z from 'zod';
import { agentProfile } from './agents.js';
import { type ConversationStore, loadCall } from './conversation.js';
import { errorIssues, validatorOf } from './json-schema.js';
import { AgentName, toolNames } from './names.js';
import { StepStateInvalid, StepwiseError } from './errors.js';
import { type ExternalToolNames, type ToolCatalogStore, isExternalToolName, mcpSeparator, noExternalTools, toolNamePattern } from './tools/external.js';

/** What to do with a call a rule matches. */
export const RuleAction = z.enum(['approve', 'deny', 'ask']);
export type RuleAction = z.infer<typeof RuleAction>;

/**
 * Whether a policy may name a tool: a built-in tool, or one of the deployment's external tools
 * (`<server>__<tool>` of a configured MCP server, a configured Lambda tool).
 */
export function approvableTool(external: ExternalToolNames = noExternalTools): (name: string) => boolean {
  return (name) => toolNames.includes(name) || isExternalToolName(external, name);
}

/** The tools a policy may name in a deployment, as a refusal lists them: `calculator, …, docs__<tool>, word_count`. */
export function approvableToolsText(external: ExternalToolNames = noExternalTools): string {
  return [...toolNames, ...external.mcpServers.map((server) => `${server}${mcpSeparator}<tool>`), ...external.lambdaTools].join(', ');
}

/**
 * A tool a policy names, as the model calls it. With `external`, only the tools the deployment
 * has (a request: a name it does not have would never match a call, and the call would run
 * ungated); without it, any tool name (a stored policy, checked when its run was made).
 */
function policyToolName(external?: ExternalToolNames) {
  const name = z
    .string()
    .regex(toolNamePattern, { abort: true, error: 'must be a tool name (^[a-zA-Z0-9_-]{1,64}$)' })
    .meta({ description: 'A built-in tool, `<server>__<tool>` of a configured MCP server, or a configured Lambda tool.' });
  if (!external) return name;
  const known = approvableTool(external);
  return name.refine(known, { error: (issue) => `unknown tool ${JSON.stringify(issue.input)}; this deployment has ${approvableToolsText(external)}` });
}

/** The most tools one policy gates: every built-in tool, and room for external ones. */
const maxPolicyTools = 100;

/**
 * An approval policy: which tools need a reviewer's approval before they run, and rules that
 * decide some calls at once (`POST /runs` `approvals`, and the run record). `external` are the
 * deployment's external tools, for a request; a stored policy takes any tool name.
 */
export function approvalPolicy(external?: ExternalToolNames) {
  const tool = policyToolName(external);
  /**
   * One approval rule: the calls of `tool` whose input fields each match their glob (`*` within a
   * path segment, `**` across segments, `?` one character; a field the call lacks matches nothing).
   */
  const rule = z
    .object({
      tool,
      input: z.record(z.string().min(1).max(100), z.string().min(1).max(500)).optional(),
      action: RuleAction,
    })
    .strict();
  return z
    .object({
      tools: z
        .array(tool)
        .max(maxPolicyTools)
        .default([])
        .meta({ description: 'Tools whose calls wait for a reviewer; added to the deployment\'s own list.', example: ['write_file', 'edit_file'] }),
      rules: z
        .array(rule)
        .max(50)
        .optional()
        .meta({
          description: 'Checked in order before a gated call waits; the first that matches decides it (approve, deny) or makes it wait (ask). A call no rule matches waits if its tool is in `tools`, else runs.',
          example: [{ tool: 'write_file', input: { path: 'notes/**' }, action: 'approve' }],
        }),
    })
    .strict();
}

/** A stored approval policy (the run record): any tool names, checked when the run was made. */
export const ApprovalPolicy = approvalPolicy();
export type ApprovalPolicy = z.infer<typeof ApprovalPolicy>;
export type ApprovalRule = NonNullable<ApprovalPolicy['rules']>[number];

/** The tools a policy may stop: those it gates and those its rules name. */
export function policyTools(policy: Pick<ApprovalPolicy, 'tools' | 'rules'>): string[] {
  return [...new Set([...policy.tools, ...(policy.rules ?? []).map((rule) => rule.tool)])];
}

/**
 * What a policy does with one call: the first rule that matches it, else `ask` for a gated tool
 * and `approve` for any other. Always exactly one answer (`index` names the rule, when one did).
 */
export function ruleFor(policy: Pick<ApprovalPolicy, 'tools' | 'rules'>, call: { name: string; input: unknown }): { action: RuleAction; index?: number } {
  const fields = (typeof call.input === 'object' && call.input !== null ? call.input : {}) as Record<string, unknown>;
  const index = (policy.rules ?? []).findIndex(
    (rule) =>
      rule.tool === call.name &&
      Object.entries(rule.input ?? {}).every(([field, glob]) => typeof fields[field] === 'string' && minimatch(fields[field], glob, { dot: true, nocomment: true, nonegate: true })),
  );
  const rule = policy.rules?.[index];
  if (rule) return { action: rule.action, index };
  return { action: policy.tools.includes(call.name) ? 'ask' : 'approve' };
}

/**
 * The tools a run gates: the deployment's list and the run's own, each once, in a stable order:
 * the built-in tools in their order, then external tools by name.
 */
export function gatedTools(deployment: readonly string[], requested: readonly string[] = []): string[] {
  const wanted = new Set([...deployment, ...requested]);
  return [...toolNames.filter((name) => wanted.has(name)), ...[...wanted].filter((name) => !toolNames.includes(name)).sort()];
}

export const Decision = z.enum(['approve', 'deny']);
export type Decision = z.infer<typeof Decision>;

const words = z.string().trim().min(1, 'must not be empty when given').max(2000, 'must be at most 2000 characters');

/** The body of `POST /runs/{runId}/approvals/{toolUseId}`. */
export const DecisionBody = z
  .object({
    decision: Decision,
    reason: words.optional().meta({ description: 'Why, kept with the decision (and, for a denial without a message, what the model reads).' }),
    message: words.optional().meta({ description: 'What the model reads in the tool result: after the output of an approved call, as the reason of a denied one.' }),
    input: z
      .record(z.string(), z.unknown())
      .optional()
      .meta({ description: 'Approve only: the input the call runs with instead of the model\'s, checked against the tool\'s schema (400 naming the field otherwise).' }),
  })
  .strict()
  .refine((body) => body.input === undefined || body.decision === 'approve', { path: ['input'], message: 'can be given only to approve' });
export type DecisionBody = z.infer<typeof DecisionBody>;

/**
 * Tool inputs longer than this (as JSON) are shown cut in the approval request. It is the item
 * size DynamoDB allows (400 KB) with room for the rest of the record, so in practice the reviewer
 * sees the whole input: a model's answer (its `max_tokens`) is far smaller. The transcript has all of it.
 */
export const approvalInputChars = 300_000;

/** The `Stepwise Approval Requested` event carries the input cut to this (an EventBridge entry holds 256 KB). */
export const announcedInputChars = 16_000;

/** One approval request, as stored beside the run record. */
export const Approval = z.object({
  runId: z.string(),
  toolUseId: z.string(),
  agent: AgentName,
  conversationId: z.string(),
  /** The assistant message holding the call. */
  seq: z.number().int().nonnegative(),
  name: z.string(),
  /** The call's input, or its JSON cut to `approvalInputChars` when `inputTruncated`. */
  input: z.unknown(),
  inputTruncated: z.boolean().optional(),
  requestedAt: z.string(),
  /** The task token of the newest wait on this call; absent until the loop waits. */
  token: z.string().optional(),
  decision: Decision.optional(),
  reason: z.string().optional(),
  decidedAt: z.string().optional(),
  /** Who decided: the reviewer's principal, or `timeout` (`reviewer` on records made before decisions named their reviewer). */
  decidedBy: z.string().optional(),
  /** What the model reads in the tool result, from the reviewer. */
  message: z.string().optional(),
  /** The input the reviewer approved the call with instead of the model's. */
  editedInput: z.record(z.string(), z.unknown()).optional(),
});
export type Approval = z.infer<typeof Approval>;

/** An undecided approval as `GET /runs/{runId}` shows it in `waitingFor`. */
export const WaitingFor = z
  .object({
    toolUseId: z.string(),
    name: z.string(),
    input: z.unknown(),
    inputTruncated: z.boolean().optional(),
    requestedAt: z.string(),
  })
  .meta({ id: 'WaitingFor', description: 'A tool call waiting for a reviewer’s decision.' });
export type WaitingFor = z.infer<typeof WaitingFor>;

/** What a decision says besides approve or deny, as every view of it shows it (`notesOf`). */
const decisionNotes = {
  reason: z.string().optional(),
  message: z.string().optional(),
  edited: z.boolean().optional(),
};

/** A decision's reason, message and whether it edited the input, as the views show them. */
export function notesOf(approval: Pick<Approval, 'reason' | 'message' | 'editedInput'>): { reason?: string; message?: string; edited?: true } {
  return {
    ...(approval.reason ? { reason: approval.reason } : {}),
    ...(approval.message ? { message: approval.message } : {}),
    ...(approval.editedInput ? { edited: true as const } : {}),
  };
}

/** What `POST /runs/{runId}/approvals/{toolUseId}` answers. */
export const DecisionRecorded = z
  .object({
    runId: z.string(),
    toolUseId: z.string(),
    decision: Decision,
    ...decisionNotes,
    decidedAt: z.string(),
    decidedBy: z.string(),
  })
  .meta({ id: 'DecisionRecorded', description: 'The decision was recorded; the run goes on.' });
export type DecisionRecorded = z.infer<typeof DecisionRecorded>;

/** Approval records. Every write is conditional, so a decision is made once. */
export interface ApprovalStore {
  /** The tools that may need approval in a run (gated or named by a rule): the run record's policy, fixed when the run was created. */
  toolsFor(runId: string): Promise<readonly string[]>;
  /** The run's approval policy, rules included. */
  policyFor(runId: string): Promise<Pick<ApprovalPolicy, 'tools' | 'rules'>>;
  get(runId: string, toolUseId: string): Promise<Approval | undefined>;
  /** Every approval of a run, decided or not. */
  list(runId: string): Promise<Approval[]>;
  /** Creates the record unless one exists; returns the record that stands. */
  open(approval: Approval): Promise<Approval>;
  /** Stores the newest wait's token on an undecided record. */
  attachToken(runId: string, toolUseId: string, token: string): Promise<'attached' | 'decided' | 'missing'>;
  /** Records a decision unless one is recorded; returns the record that stands afterwards. */
  decide(
    runId: string,
    toolUseId: string,
    decision: Required<Pick<Approval, 'decision' | 'decidedAt' | 'decidedBy'>> & Pick<Approval, 'reason' | 'message' | 'editedInput'>,
  ): Promise<{ recorded: boolean; approval: Approval | undefined }>;
}

/** A run's policy names an MCP tool its server does not list: the run stops before a call of the tool it meant runs ungated. */
export class ApprovalPolicyInvalid extends StepwiseError {
  override readonly name = 'ApprovalPolicyInvalid';
}

/** An edited input that does not fit the tool's schema: refused like a body that fails its own, naming the fields. */
export class InvalidEditedInput extends StepwiseError {
  override readonly name = 'InvalidEditedInput';
  constructor(
    message: string,
    readonly issues: { path: string; message: string }[] = [],
  ) {
    super(message);
  }
}

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
  const tool = agentProfile(approval.agent).tools.get(approval.name);
  if (tool) {
    const parsed = tool.input.safeParse(input);
    if (!parsed.success) throw invalidEdit(parsed.error.issues.map((i) => ({ path: ['input', ...i.path].join('.'), message: i.message })));
    return parsed.data as Record<string, unknown>;
  }
  const catalog = await catalogs?.getCatalog(approval.runId);
  const external = catalog?.tools.find((t) => t.name === approval.name && t.agents.includes(approval.agent));
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

/** Wakes a state machine task that waits on a token (Step Functions `SendTaskSuccess`). */
export interface TaskTokens {
  /** `false` when the task no longer waits on that token (timed out, stopped, or waited again). */
  resume(token: string, output: unknown): Promise<boolean>;
}

/** The record was decided while a wait was being set up: the loop goes on to the tool step. */
export class ApprovalDecided extends StepwiseError {
  override readonly name = 'ApprovalDecided';
}

/** No approval was requested for that call of that run. */
export class ApprovalNotFound extends StepwiseError {
  override readonly name = 'ApprovalNotFound';
}

/** The call was decided already. */
export class ApprovalAlreadyDecided extends StepwiseError {
  override readonly name = 'ApprovalAlreadyDecided';
}

/** The run has ended: nothing of it waits for a decision any more. */
export class RunNotRunning extends StepwiseError {
  override readonly name = 'RunNotRunning';
}

const stepFields = {
  runId: z.string().min(1),
  agent: AgentName,
  conversationId: z.string().min(1).optional(),
  seq: z.number().int().nonnegative(),
  toolUseId: z.string().min(1),
};

/** The approval function's event: open the request, or store the token the loop waits on. */
export const ApprovalStepInput = z.discriminatedUnion('step', [
  z.object({ step: z.literal('request'), ...stepFields }),
  z.object({ step: z.literal('await'), ...stepFields, token: z.string().min(1) }),
]);
export type ApprovalStepInput = z.infer<typeof ApprovalStepInput>;

/** The detail of a `Stepwise Approval Requested` event (source `stepwise`). */
export const ApprovalRequestedDetail = z.object({
  runId: z.string(),
  toolUseId: z.string(),
  agent: AgentName,
  name: z.string(),
  input: z.unknown(),
  inputTruncated: z.boolean().optional(),
  requestedAt: z.string(),
});
export type ApprovalRequestedDetail = z.infer<typeof ApprovalRequestedDetail>;

/** What the request step hands the state machine: whether to wait, and what to announce. */
export type RequestOutcome = { decided: true } | { decided: false; detail: ApprovalRequestedDetail };

export interface ApprovalDeps {
  conversations: ConversationStore;
  approvals: ApprovalStore;
  clock?: () => Date;
}

const now = (clock?: () => Date) => (clock ?? (() => new Date()))().toISOString();

/**
 * Opens the approval request of one call (once, however often it runs) and returns the
 * announcement. A call that is decided, or already answered, needs no wait.
 */
export async function requestApproval(
  input: Extract<ApprovalStepInput, { step: 'request' }>,
  deps: ApprovalDeps,
): Promise<RequestOutcome> {
  const { conversationId, turn, call, index } = await loadCall(deps.conversations, input);
  if (turn.results[index]) return { decided: true };

  const shown = boundedInput(call.input);
  const standing = await deps.approvals.open({
    runId: input.runId,
    toolUseId: call.id,
    agent: input.agent,
    conversationId,
    seq: input.seq,
    name: call.name,
    ...shown,
    requestedAt: now(deps.clock),
  });
  if (standing.conversationId !== conversationId || standing.seq !== input.seq) {
    throw new StepStateInvalid(`Tool call id ${call.id} appears twice in run ${input.runId}; approvals are kept by tool call id.`);
  }
  if (standing.decision) return { decided: true };
  // A rule may decide it at once, recorded like a reviewer's decision.
  const rule = ruleFor(await deps.approvals.policyFor(input.runId), call);
  if (rule.action !== 'ask') {
    const { approval } = await deps.approvals.decide(input.runId, call.id, {
      decision: rule.action,
      decidedAt: now(deps.clock),
      decidedBy: rule.index === undefined ? 'policy' : `rule:${rule.index}`,
    });
    if (approval?.decision) return { decided: true };
  }
  return { decided: false, detail: announcement(standing) };
}

/** Stores the token the loop now waits on; throws `ApprovalDecided` when there is nothing to wait for. */
export async function awaitDecision(
  input: Extract<ApprovalStepInput, { step: 'await' }>,
  deps: Pick<ApprovalDeps, 'approvals'>,
): Promise<{ toolUseId: string; waiting: true }> {
  const outcome = await deps.approvals.attachToken(input.runId, input.toolUseId, input.token);
  if (outcome === 'missing') throw new StepStateInvalid(`Run ${input.runId} has no approval request for ${input.toolUseId}.`);
  if (outcome === 'decided') throw new ApprovalDecided(`Tool call ${input.toolUseId} is decided already; nothing to wait for.`);
  return { toolUseId: input.toolUseId, waiting: true };
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

/**
 * The decision that applies to a gated call when its tool step runs. A call still undecided
 * here is one whose wait timed out: it is denied with reason `timeout`, once, so a reviewer who
 * decides later is told it was decided.
 */
export async function settleApproval(
  runId: string,
  toolUseId: string,
  deps: { approvals: Pick<ApprovalStore, 'get' | 'decide'>; clock?: () => Date },
): Promise<Approval & { decision: Decision }> {
  const record = await deps.approvals.get(runId, toolUseId);
  if (!record) throw new StepStateInvalid(`Tool call ${toolUseId} of run ${runId} needs approval, but none was requested.`);
  const settled = record.decision
    ? record
    : (await deps.approvals.decide(runId, toolUseId, { decision: 'deny', reason: 'timeout', decidedAt: now(deps.clock), decidedBy: 'timeout' }))
        .approval;
  if (!settled?.decision) throw new StepStateInvalid(`The approval of ${toolUseId} in run ${runId} could not be settled.`);
  return { ...settled, decision: settled.decision };
}

/** The `is_error` tool result text the model gets for a denied call: the reviewer's message, else the reason. */
export function denialMessage(approval: Pick<Approval, 'reason' | 'decidedBy' | 'message'>): string {
  const said = approval.message ?? approval.reason;
  const why =
    approval.decidedBy === 'timeout'
      ? 'A reviewer denied this tool call: timeout (no reviewer decided in time).'
      : said
        ? `A reviewer denied this tool call: ${said}`
        : 'A reviewer denied this tool call.';
  return `${why}\nThe call was not run. Do not repeat it unchanged; choose another way or explain what you need.`;
}

/**
 * The result the model reads for an approved call: a note that a reviewer changed its input
 * (with the input it ran with; the model's own call stays as it wrote it, invariant 12), the
 * tool's output, then the reviewer's message.
 */
export function approvedResult(content: string, approval: Pick<Approval, 'editedInput' | 'message'>): string {
  const edited = approval.editedInput ? `A reviewer edited this call's input before it ran; it ran with: ${JSON.stringify(approval.editedInput)}\n\n` : '';
  const message = approval.message ? `\n\nMessage from the reviewer: ${approval.message}` : '';
  return `${edited}${content}${message}`;
}

/** A decided approval as `GET /runs/{runId}` shows it in `decisions`. */
export const DecisionView = z
  .object({
    toolUseId: z.string(),
    name: z.string(),
    decision: Decision,
    ...decisionNotes,
    decidedAt: z.string(),
    decidedBy: z.string(),
  })
  .meta({ id: 'DecisionView', description: 'A decided tool call: who decided (a principal, or `timeout`), when and why.' });
export type DecisionView = z.infer<typeof DecisionView>;

/** The decided approvals of a run, in the order they were decided. */
export function decisionsOf(approvals: Approval[]): DecisionView[] {
  return approvals
    .filter((a): a is Approval & { decision: Decision } => a.decision !== undefined)
    .sort((a, b) => byTime(a.decidedAt ?? '', b.decidedAt ?? ''))
    .map((a) => ({
      toolUseId: a.toolUseId,
      name: a.name,
      decision: a.decision,
      ...notesOf(a),
      decidedAt: a.decidedAt ?? '',
      decidedBy: a.decidedBy ?? 'reviewer',
    }));
}

/** The undecided approvals of a running run, oldest first. */
export function waitingFor(approvals: Approval[]): WaitingFor[] {
  return approvals
    .filter((a) => !a.decision)
    .sort((a, b) => byTime(a.requestedAt, b.requestedAt))
    .map((a) => ({
      toolUseId: a.toolUseId,
      name: a.name,
      input: a.input,
      ...(a.inputTruncated ? { inputTruncated: true } : {}),
      requestedAt: a.requestedAt,
    }));
}

/** Orders ISO timestamps oldest first, for `sort`. */
function byTime(a: string, b: string): number {
  if (a < b) return -1;
  // Stryker disable next-line ConditionalExpression,EqualityOperator: V8's sort only asks whether a pair is out of order (< 0), so 1 and 0 order alike
  return a > b ? 1 : 0;
}

function announcement(approval: Approval): ApprovalRequestedDetail {
  const json = typeof approval.input === 'string' && approval.inputTruncated ? approval.input : JSON.stringify(approval.input ?? {});
  const cut = approval.inputTruncated || json.length > announcedInputChars;
  return {
    runId: approval.runId,
    toolUseId: approval.toolUseId,
    agent: approval.agent,
    name: approval.name,
    input: cut ? `${json.slice(0, announcedInputChars)}…` : approval.input,
    ...(cut ? { inputTruncated: true } : {}),
    requestedAt: approval.requestedAt,
  };
}

/** A call's input as the reviewer sees it: whole, or its JSON cut when it is long. */
export function boundedInput(input: unknown): Pick<Approval, 'input' | 'inputTruncated'> {
  const json = JSON.stringify(input ?? {});
  if (json.length <= approvalInputChars) return { input: input ?? {} };
  return { input: `${json.slice(0, approvalInputChars)}…`, inputTruncated: true };
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
