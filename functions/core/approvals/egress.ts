/**
 * The deployment's gate on egress after untrusted content (DESIGN §16; docs/tools.md,
 * "Capabilities"): once a run has taken in untrusted content (a result of an `untrusted` tool, or
 * of a child run), each of its `egress` calls waits for a reviewer, whatever its policy says. The
 * inference step decides it where it marks gated calls (`approvals/feature.ts`), and opens the
 * call's approval record with `gate: "egress-after-untrusted"`, so the request step, the console
 * and the reviewer see why, and no rule of the run approves it (`underGate`).
 */
import type { Conversation } from '../conversation/types.js';
import { ToolResultBlock, toolUses } from '../model/messages.js';
import { type Capability, type ExternalTool, unclassifiedCapabilities } from '../tools/external/types.js';
import { type ToolKinds, capabilitiesOf } from '../untrusted/capabilities.js';
import { untrustedTag } from '../untrusted/mark.js';
import type { Approval, RuleAction } from './types.js';

/** What a rule decides of a call under a deployment's gate: it may deny it, never approve it. */
export function underGate<Rule extends { action: RuleAction }>(approval: Pick<Approval, 'gate'>, rule: Rule): Rule | { action: 'ask' } {
  return approval.gate && rule.action === 'approve' ? { action: 'ask' } : rule;
}

/**
 * Whether the conversation holds untrusted content: a result, marked as the tool step marks what
 * ran (`untrusted/mark.ts`), of a call whose tool is `untrusted`. It sees what a continued session
 * or a fork brought in with its messages, which the run's own record does not.
 */
export function holdsUntrusted(conversation: Pick<Conversation, 'messages'>, kinds: ToolKinds): boolean {
  const names = new Map<string, string>();
  for (const message of conversation.messages) {
    for (const call of message.role === 'assistant' ? toolUses(message) : []) names.set(call.id, call.name);
    for (const block of message.role === 'user' ? message.content : []) {
      const result = ToolResultBlock.safeParse(block);
      if (!result.success || !result.data.content.startsWith(`<${untrustedTag}-`)) continue;
      const name = names.get(result.data.tool_use_id);
      if (name === undefined || capabilitiesOf(name, kinds).includes('untrusted')) return true;
    }
  }
  return false;
}

/** The calls of `egress` tools among `calls`: only an agent's own external tools send data out (a name it does not have is refused unrun). */
export function egressCalls<Call extends { name: string }>(calls: readonly Call[], external: readonly Pick<ExternalTool, 'name' | 'capabilities'>[]): Call[] {
  const capabilities = (name: string): readonly Capability[] => {
    const tool = external.find((entry) => entry.name === name);
    return tool ? (tool.capabilities ?? unclassifiedCapabilities) : [];
  };
  return calls.filter((call) => capabilities(call.name).includes('egress'));
}
