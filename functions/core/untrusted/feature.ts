/**
 * Untrusted content at the two steps (DESIGN §16; docs/tools.md, "Untrusted output"): the tool
 * step marks what an external tool or another agent answered as untrusted data (`mark.ts`), and
 * records on the run that it has taken in untrusted content when the tool is `untrusted`
 * (`capabilities.ts`); the inference step tells an agent that may read such content what the
 * marks mean, once, in its system prompt.
 */
import type { InferenceFeature, ToolFeature } from '../steps/hooks.js';
import { reviewerNotes } from '../approvals/gate.js';
import { markUntrusted, untrustedDataRules } from './mark.js';

/** Says what the marks mean, in the system prompt of an agent offered external tools or agents (the same bytes every step of a run). */
export const untrustedRulesFeature: InferenceFeature = {
  name: 'untrusted-rules',
  request(step, request) {
    const { profile } = step;
    const external = (request.catalog?.tools ?? []).some((tool) => profile.hasExternal(tool));
    if (external || profile.agentTools.size > 0) request.system += `\n\n${untrustedDataRules}`;
  },
};

/**
 * Marks the output of an external tool (its errors too: the server wrote them) or the answer of an
 * agent that ran, after its size was capped (so the
 * closing tag is never cut off); an `untrusted` tool's marks the run first, so a retried step
 * that finds the result stored never misses it.
 */
export const untrustedToolFeature: ToolFeature = {
  name: 'untrusted',
  async afterTool(outcome) {
    const { from, ran, input, deps } = outcome;
    if (!ran || !from || from.kind === 'builtin') return;
    // A call of an agent that failed is answered with Stepwise's own words (not started, cancelled, too deep).
    if (from.kind === 'agent' && outcome.result.is_error) return;
    if (from.capabilities.includes('untrusted')) await deps.runs?.markUntrusted?.(input.runId);
    // A reviewer's notes around an approved call's output are the reviewer's words: they stay outside.
    const { content } = outcome.result;
    const notes = outcome.approval ? reviewerNotes(outcome.approval) : { before: '', after: '' };
    const before = content.startsWith(notes.before) ? notes.before : '';
    const after = notes.after && content.endsWith(notes.after) && content.length - notes.after.length >= before.length ? notes.after : '';
    const output = content.slice(before.length, content.length - after.length);
    outcome.result = { ...outcome.result, content: `${before}${markUntrusted(output, outcome.call.name)}${after}` };
  },
};
