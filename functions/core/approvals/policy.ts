/**
 * Approval policies: which tools wait for a reviewer, and rules that decide some calls at once
 * (first match wins).
 */
import { minimatch } from 'minimatch';
import { toolNames } from '../tools/builtin/builtin.js';
import { type ExternalToolNames, mcpSeparator } from '../tools/external/types.js';
import { isExternalToolName, noExternalTools } from '../tools/external/names.js';
import { ApprovalPolicy, PolicyToolName, type RuleAction, policySchema } from './types.js';

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
 * An approval policy as a request may name it: with `external`, only the tools the deployment has
 * (a name it does not have would never match a call, and the call would run ungated); without it,
 * any tool name, as a stored policy (checked when its run was made).
 */
export function approvalPolicy(external?: ExternalToolNames) {
  if (!external) return ApprovalPolicy;
  const known = approvableTool(external);
  return policySchema(
    PolicyToolName.refine(known, { error: (issue) => `unknown tool ${JSON.stringify(issue.input)}; this deployment has ${approvableToolsText(external)}` }),
  );
}

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
