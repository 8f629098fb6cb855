/**
 * Approval policies: which tools wait for a reviewer, and rules that decide some calls at once
 * (first match wins). A run's policy has layers (the deployment's, its agents', its own), each
 * deciding alone; the strictest answer stands (DESIGN §16).
 */
import { minimatch } from 'minimatch';
import { toolNames } from '../tools/builtin/builtin.js';
import { type ExternalToolNames, mcpSeparator } from '../tools/external/types.js';
import { coversTool, isExternalToolName, noExternalTools, wholeServerOf } from '../tools/external/names.js';
import { ApprovalPolicy, type PolicyLayer, type PolicySource, PolicyToolName, type RuleAction, type RunApprovals, policySchema } from './types.js';

/**
 * Whether a policy may name a tool: a built-in tool, or one of the deployment's external tools
 * (`<server>__<tool>` or `<server>__*` of a configured MCP server, a configured Lambda tool).
 */
export function approvableTool(external: ExternalToolNames = noExternalTools): (name: string) => boolean {
  return (name) => toolNames.includes(name) || isExternalToolName(external, name) || external.mcpServers.includes(wholeServerOf(name) ?? '');
}

/** The tools a policy may name in a deployment, as a refusal lists them: `calculator, …, docs__<tool>, word_count (and <server>__* …)`. */
export function approvableToolsText(external: ExternalToolNames = noExternalTools): string {
  const names = [...toolNames, ...external.mcpServers.map((server) => `${server}${mcpSeparator}<tool>`), ...external.lambdaTools].join(', ');
  return external.mcpServers.length ? `${names} (and <server>${mcpSeparator}* for every tool of a server)` : names;
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

/** The tools a policy may stop: those it gates and those its rules name, in every layer. */
export function policyTools(policy: Pick<RunApprovals, 'tools' | 'rules' | 'layers'>): string[] {
  return [...new Set(layersOf(policy).flatMap((layer) => [...layer.tools, ...(layer.rules ?? []).map((rule) => rule.tool)]))];
}

/** Whether `tools` (a policy's gates, or the tools it may stop) cover a call of `name` (`<server>__*` covers the server's tools). */
export function covers(tools: readonly string[], name: string): boolean {
  return tools.some((entry) => coversTool(entry, name));
}

/**
 * What one policy alone does with one call: the first rule that matches it, else `ask` for a gated
 * tool and `approve` for any other. Always exactly one answer (`index` names the rule, when one did).
 */
export function ruleFor(policy: Pick<ApprovalPolicy, 'tools' | 'rules'>, call: { name: string; input: unknown }): { action: RuleAction; index?: number } {
  const fields = (typeof call.input === 'object' && call.input !== null ? call.input : {}) as Record<string, unknown>;
  const index = (policy.rules ?? []).findIndex(
    (rule) =>
      coversTool(rule.tool, call.name) &&
      Object.entries(rule.input ?? {}).every(([field, glob]) => typeof fields[field] === 'string' && minimatch(fields[field], glob, { dot: true, nocomment: true, nonegate: true })),
  );
  const rule = policy.rules?.[index];
  if (rule) return { action: rule.action, index };
  return { action: covers(policy.tools, call.name) ? 'ask' : 'approve' };
}

/**
 * The layers of a run's policy. A record made before layers were kept cannot say where a rule
 * came from: its gates read as the deployment's and its rules as the run's, so they only tighten
 * (a call such a rule approved waits for a reviewer instead: fail closed).
 */
export function layersOf(policy: Pick<RunApprovals, 'tools' | 'rules' | 'layers'>): PolicyLayer[] {
  if (policy.layers) return policy.layers;
  return [{ from: 'deployment', tools: policy.tools }, ...(policy.rules?.length ? [{ from: 'run', tools: [], rules: policy.rules }] : [])];
}

/** How much control an answer keeps: a stricter answer wins over a looser one. */
const strictness: Record<RuleAction, number> = { approve: 0, ask: 1, deny: 2 };

/**
 * What a run's policy does with one call: each layer answers as a policy alone (`ruleFor`) and the
 * strictest answer stands. So a layer's rule approves only calls no other layer gates (a run's
 * rules, only calls the run gated itself; never a call the deployment gates, whatever a run asks,
 * so under `separateReviewer` no rule decides for the owner), while a `deny` or `ask` rule of any
 * layer always tightens. `by` names the rule that decided (`rule:<i>` for the run's own, as its
 * request numbers them; `<source>:rule:<i>` for another layer's), absent when no rule did.
 */
export function decisionFor(policy: Pick<RunApprovals, 'tools' | 'rules' | 'layers'>, call: { name: string; input: unknown }): { action: RuleAction; by?: string } {
  let decision: { action: RuleAction; by?: string } = { action: 'approve' };
  for (const layer of layersOf(policy)) {
    const { action, index } = ruleFor(layer, call);
    const by = index === undefined ? undefined : layer.from === 'run' ? `rule:${index}` : `${layer.from}:rule:${index}`;
    // An equal answer names the first rule that gave it.
    if (strictness[action] > strictness[decision.action] || (action === decision.action && decision.by === undefined && by !== undefined)) {
      decision = { action, ...(by ? { by } : {}) };
    }
  }
  return decision;
}

/**
 * The tools a run gates: the deployment's list and the run's own, each once, in a stable order:
 * the built-in tools in their order, then external tools by name.
 */
export function gatedTools(deployment: readonly string[], requested: readonly string[] = []): string[] {
  const wanted = new Set([...deployment, ...requested]);
  return [...toolNames.filter((name) => wanted.has(name)), ...[...wanted].filter((name) => !toolNames.includes(name)).sort()];
}

/**
 * A run's policy from its layers, in order of authority (the deployment's, its agents', its own):
 * every gated tool once, the run's own rules as its request gave them, and each layer that gates
 * or rules anything; `undefined` when none does.
 */
export function layeredPolicy(layers: readonly PolicyLayer[]): RunApprovals | undefined {
  const kept = layers.filter((layer) => layer.tools.length || layer.rules?.length);
  if (!kept.length) return undefined;
  const rules = kept.find((layer) => layer.from === 'run')?.rules;
  return {
    tools: gatedTools(kept.flatMap((layer) => layer.tools)),
    ...(rules ? { rules } : {}),
    layers: kept.map((layer) => ({ ...layer, tools: gatedTools(layer.tools) })),
  };
}

/** One layer of a run's policy from a source's policy (a definition's, a request's). */
export function layer(from: PolicySource, policy: Partial<Pick<ApprovalPolicy, 'tools' | 'rules'>> | undefined): PolicyLayer {
  return { from, tools: policy?.tools ?? [], ...(policy?.rules?.length ? { rules: policy.rules } : {}) };
}
