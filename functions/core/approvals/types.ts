/**
 * Approvals' records, ports and errors. The approval record is the source of truth: the state
 * machine's task token only wakes the loop; the tool step applies whatever the record says.
 */
import * as z from 'zod';
import { type ConversationStore } from '../conversation/types.js';
import { AgentName } from '../agents/types.js';
import { type Issue, named } from '../errors/errors.js';
import { mcpSeparator, toolNamePattern } from '../tools/external/types.js';

/** What to do with a call a rule matches. */
export const RuleAction = z.enum(['approve', 'deny', 'ask']);

export type RuleAction = z.infer<typeof RuleAction>;

/** `<server>__*`: every tool of an MCP server, those it lists later included. */
export const wholeServerPattern = new RegExp(`^[a-zA-Z0-9-]{1,32}${mcpSeparator}\\*$`);

/** A tool a policy names, as the model calls it, or a whole MCP server: any such name (a stored policy, checked when its run was made). */
export const PolicyToolName = z
  .string()
  .refine((name) => toolNamePattern.test(name) || wholeServerPattern.test(name), {
    abort: true,
    error: 'must be a tool name (^[a-zA-Z0-9_-]{1,64}$) or <server>__*',
  })
  .meta({ description: 'A built-in tool, `<server>__<tool>` of a configured MCP server or `<server>__*` for all of its tools, or a configured Lambda tool.' });

/** The most tools one policy gates: every built-in tool, and room for external ones. */
const maxPolicyTools = 100;

/**
 * An approval policy whose tools are named by `tool`: which tools need a reviewer's approval
 * before they run, and rules that decide some calls at once (`POST /runs` `approvals`, and the run
 * record).
 */
export function policySchema<Tool extends z.ZodType<string>>(tool: Tool) {
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
        .meta({ description: 'Tools whose calls wait for a reviewer (`<server>__*`: every tool of an MCP server); added to the deployment\'s own list.', example: ['write_file', 'edit_file'] }),
      rules: z
        .array(rule)
        .max(50)
        .optional()
        .meta({
          description:
            'Checked in order before a gated call waits; the first that matches decides it (approve, deny) or makes it wait (ask). A call no rule matches waits if its tool is in `tools`, else runs. ' +
            'A run\'s `approve` never decides a call the deployment or an agent gates: that call still waits for a reviewer.',
          example: [{ tool: 'write_file', input: { path: 'notes/**' }, action: 'approve' }],
        }),
    })
    .strict();
}

/** A stored approval policy (an agent definition's): any tool names, checked when it was made. */
export const ApprovalPolicy = policySchema(PolicyToolName);
export type ApprovalPolicy = z.infer<typeof ApprovalPolicy>;
export type ApprovalRule = NonNullable<ApprovalPolicy['rules']>[number];

/** Where one layer of a run's policy comes from: the deployment, an agent definition (`agent:<name>`), or the run's own request. */
export const PolicySource = z.string().regex(/^(deployment|run|agent:[a-z0-9-]{1,64})$/, 'deployment, run or agent:<name>');
export type PolicySource = z.infer<typeof PolicySource>;

/** One layer of a run's policy: the gates and rules of one source, which decide only for that source (DESIGN §16). */
export const PolicyLayer = ApprovalPolicy.extend({ from: PolicySource });
export type PolicyLayer = z.infer<typeof PolicyLayer>;

/**
 * A run's approval policy as its record keeps it: `tools`, every tool any layer gates; `rules`, the
 * run's own, as its request gave them; and `layers`, each source's own gates and rules, which
 * decide. Records made before layers have `tools` and `rules` only (`layersOf` reads them).
 */
export const RunApprovals = ApprovalPolicy.extend({ layers: z.array(PolicyLayer).max(20).optional() });
export type RunApprovals = z.infer<typeof RunApprovals>;

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

/**
 * Why a call waits when its run's policy is not the reason: `egress-after-untrusted`, an `egress`
 * call of a run that has taken in untrusted content (docs/tools.md, "Capabilities"). A deployment
 * gate: no rule of the run decides it, only a reviewer.
 */
export const ApprovalGate = z.enum(['egress-after-untrusted']);

export type ApprovalGate = z.infer<typeof ApprovalGate>;

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
  /** Why it waits, when not for the run's policy (`egress-after-untrusted`). */
  gate: ApprovalGate.optional(),
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
    gate: ApprovalGate.optional().meta({ description: 'Why it waits, when not for the run\'s policy: `egress-after-untrusted`, a call that sends data out from a run that has read untrusted content.' }),
  })
  .meta({ id: 'WaitingFor', description: 'A tool call waiting for a reviewer’s decision.' });

export type WaitingFor = z.infer<typeof WaitingFor>;

/** What a decision says besides approve or deny, as every view of it shows it (`notesOf`). */
const decisionNotes = {
  reason: z.string().optional(),
  message: z.string().optional(),
  edited: z.boolean().optional(),
};

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
  /** The run's approval policy, rules and layers included. */
  policyFor(runId: string): Promise<RunApprovals>;
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
export class ApprovalPolicyInvalid extends named('ApprovalPolicyInvalid') {}

/** An edited input that does not fit the tool's schema: refused like a body that fails its own, naming the fields. */
export class InvalidEditedInput extends named('InvalidEditedInput') {
  constructor(
    message: string,
    override readonly issues: Issue[] = [],
  ) {
    super(message);
  }
}

/** Wakes a state machine task that waits on a token (Step Functions `SendTaskSuccess`). */
export interface TaskTokens {
  /** `false` when the task no longer waits on that token (timed out, stopped, or waited again). */
  resume(token: string, output: unknown): Promise<boolean>;
}

/** The record was decided while a wait was being set up: the loop goes on to the tool step. */
export class ApprovalDecided extends named('ApprovalDecided') {}

/** No approval was requested for that call of that run. */
export class ApprovalNotFound extends named('ApprovalNotFound') {}

/** The call was decided already. */
export class ApprovalAlreadyDecided extends named('ApprovalAlreadyDecided') {}

/** The run has ended: nothing of it waits for a decision any more. */
export class RunNotRunning extends named('RunNotRunning') {}

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
  gate: ApprovalGate.optional(),
});

export type ApprovalRequestedDetail = z.infer<typeof ApprovalRequestedDetail>;

/** What the request step hands the state machine: whether to wait, and what to announce. */
export type RequestOutcome = { decided: true } | { decided: false; detail: ApprovalRequestedDetail };

export interface ApprovalDeps {
  conversations: ConversationStore;
  approvals: ApprovalStore;
  clock?: () => Date;
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
