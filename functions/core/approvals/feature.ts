/**
 * Approvals at the two steps (docs/callers-and-security.md, "Approvals"): the inference step marks the calls
 * that wait for a reviewer (and, at an agent's first step, checks that the policy names only tools
 * the run has); the tool step runs a gated call only as its approval says, with the reviewer's input
 * and message.
 */
import { StepStateInvalid } from '../errors/errors.js';
import { toolResult } from '../model/messages.js';
import type { Answer, InferenceDeps, InferenceFeature, ToolFeature } from '../steps/hooks.js';
import type { ToolCatalog } from '../tools/external/types.js';
import { mcpServerOf, unlistedPolicyTools } from '../tools/external/names.js';
import { egressCalls, holdsUntrusted } from './egress.js';
import { approvedResult, denialMessage, settleApproval } from './gate.js';
import { covers } from './policy.js';
import { boundedInput, now } from './request.js';
import { ApprovalPolicyInvalid } from './types.js';

/** Marks the calls of the run's gated tools, so the loop runs them through its gate. */
export const approvalsFeature: InferenceFeature = {
  name: 'approvals',
  async request(step, request) {
    // The catalog and the policy never change within a run: an agent's first step checks them once.
    if (step.input.iteration === 0) await checkPolicyNames(request.catalog, step.input.runId, step.deps);
  },
  async settle(answer) {
    const { deps, input } = answer;
    if (!answer.calls.length || !deps.approvals) return;
    const tools = await deps.approvals.toolsFor(input.runId);
    answer.gated = new Set(answer.calls.map((call) => call.name).filter((name) => covers(tools, name)));
    await gateEgress(answer);
  },
};

/** Runs a gated call only as its approval says: denied, it is answered without running; approved, with the reviewer's input. */
export const approvalsToolFeature: ToolFeature = {
  name: 'approvals',
  async beforeTool(call) {
    const { input, deps } = call;
    if (!input.needsApproval) return;
    if (!deps.approvals) throw new StepStateInvalid(`Tool call ${call.call.id} needs approval, but this tool step has no approval store.`);
    const approval = await settleApproval(input.runId, call.call.id, { approvals: deps.approvals, ...(deps.clock ? { clock: deps.clock } : {}) });
    if (approval.decision === 'deny') {
      call.answer = toolResult(call.call.id, denialMessage(approval), true);
      return;
    }
    call.approval = approval;
    // Run with the reviewer's input; the stored call stays as the model wrote it (invariant 12).
    if (approval.editedInput) call.call = { ...call.call, input: approval.editedInput };
  },
  afterTool(outcome) {
    const { approval } = outcome;
    if (approval && (approval.editedInput || approval.message)) outcome.result = { ...outcome.result, content: approvedResult(outcome.result.content, approval) };
  },
};

/** Stops the run when its approval policy names an MCP tool the run's catalog does not list (`unlistedPolicyTools`). */
async function checkPolicyNames(catalog: ToolCatalog | undefined, runId: string, deps: InferenceDeps): Promise<void> {
  if (!catalog || !deps.approvals || !catalog.tools.some((tool) => mcpServerOf(tool.name) !== undefined)) return;
  const unlisted = unlistedPolicyTools(await deps.approvals.toolsFor(runId), catalog);
  if (!unlisted.length) return;
  const servers = new Set(unlisted.map(mcpServerOf));
  const offered = catalog.tools.filter((tool) => servers.has(mcpServerOf(tool.name))).map((tool) => tool.name);
  throw new ApprovalPolicyInvalid(
    `The run's approval policy names ${unlisted.join(', ')}, which ${unlisted.length > 1 ? 'are' : 'is'} not among the tools its MCP server lists (${offered.join(', ') || 'none'}); the run stops rather than let the tool it meant run without approval.`,
  );
}

/**
 * Gates the answer's calls of `egress` tools when the run has taken in untrusted content (its
 * conversation holds some, or its record says so; `egress.ts`): adds their tools to `answer.gated`
 * and opens their approval records with the gate's reason. Off only with `reviewEgressAfterUntrusted: false`.
 */
async function gateEgress(answer: Answer): Promise<void> {
  const { deps, input, profile } = answer;
  if (deps.reviewEgressAfterUntrusted === false || !deps.approvals) return;
  const catalog = deps.externalTools ? await deps.externalTools.forRun(input.runId) : undefined;
  const external = (catalog?.tools ?? []).filter((tool) => profile.hasExternal(tool));
  const egress = egressCalls(answer.calls, external);
  if (!egress.length) return;
  const untrusted =
    holdsUntrusted(answer.conversation, { external, agentTools: profile.agentTools }) || (await deps.runs.get(input.runId))?.untrustedContent === true;
  if (!untrusted) return;
  for (const call of egress) {
    await deps.approvals.open({
      runId: input.runId,
      toolUseId: call.id,
      agent: input.agent,
      conversationId: answer.conversationId,
      seq: answer.message.seq,
      name: call.name,
      ...boundedInput(call.input),
      requestedAt: now(deps.clock),
      gate: 'egress-after-untrusted',
    });
  }
  answer.gated = new Set([...answer.gated, ...egress.map((call) => call.name)]);
}
