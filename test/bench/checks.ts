/**
 * The fail-closed checks in `npm run bench` (docs/callers-and-security.md): what naming the caller,
 * deciding a gated call through the policy's layers and marking or finding untrusted content cost,
 * each as the median of many calls in this process. They run once per request or per step, beside
 * requests that take milliseconds. Printed, not asserted.
 */
import { performance } from 'node:perf_hooks';
import { decisionFor } from '../../functions/core/approvals/policy.js';
import type { RunApprovals } from '../../functions/core/approvals/types.js';
import { holdsUntrusted } from '../../functions/core/approvals/egress.js';
import { callerFromClaims, callerFromIam } from '../../functions/core/callers/claims.js';
import type { StoredMessage } from '../../functions/core/conversation/types.js';
import { markUntrusted } from '../../functions/core/untrusted/mark.js';
import { row } from './table.js';

/** Median microseconds of one call of `work`, over `rounds` rounds of `batch` calls each (after a warm-up). */
function microseconds(work: () => unknown, rounds = 200, batch = 50): number {
  for (let i = 0; i < batch * 20; i++) work();
  const each: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const start = performance.now();
    for (let i = 0; i < batch; i++) work();
    each.push(((performance.now() - start) * 1000) / batch);
  }
  return [...each].sort((a, b) => a - b)[Math.floor(each.length / 2)] ?? 0;
}

/** A policy of three layers (the deployment's, an agent's, the run's), twenty rules with input globs in all. */
const policy: RunApprovals = {
  tools: ['write_file', 'edit_file', 'docs__*'],
  layers: [
    { from: 'deployment', tools: ['write_file', 'docs__*'] },
    { from: 'agent:writer', tools: ['edit_file'], rules: Array.from({ length: 10 }, (_, i) => ({ tool: 'edit_file', input: { path: `notes/${i}/**` }, action: 'approve' as const })) },
    { from: 'run', tools: [], rules: Array.from({ length: 10 }, (_, i) => ({ tool: 'write_file', input: { path: `drafts/${i}/*.md` }, action: 'approve' as const })) },
  ],
};

/** A conversation of 200 messages, each result 2,000 characters, the last one from an untrusted tool. */
function conversation(): { messages: StoredMessage[] } {
  const meta = (iteration: number) => ({ runId: 'bench', iteration });
  const messages: StoredMessage[] = [{ seq: 0, meta: meta(0), role: 'user', content: [{ type: 'text', text: 'Go.' }] }];
  for (let i = 0; i < 100; i++) {
    const name = i === 99 ? 'docs__fetch' : 'read_file';
    messages.push({ seq: 2 * i + 1, meta: meta(i), role: 'assistant', content: [{ type: 'tool_use', id: `toolu_${i}`, name, input: { path: 'a.md' } }] });
    const text = 'x'.repeat(2000);
    messages.push({ seq: 2 * i + 2, meta: meta(i), role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: name === 'docs__fetch' ? markUntrusted(text, 'tool') : text }] });
  }
  return { messages };
}

export interface CheckFigures {
  rows: { check: string; when: string; us: number }[];
}

export function measureChecks(): CheckFigures {
  const iam = { reviewerArns: ['arn:aws:iam::123456789012:role/reviewers/*', 'arn:aws:sts::123456789012:assumed-role/Reviewer'], adminArns: ['arn:aws:iam::123456789012:role/admin'] };
  const arn = 'arn:aws:sts::123456789012:assumed-role/Reviewer/alice-session';
  const claims = { iss: 'https://id.example.com', sub: 'alice', tenant: 'acme', scope: 'stepwise/approve' };
  const call = { name: 'write_file', input: { path: 'drafts/7/plan.md', content: 'x' } };
  const page = 'A fetched page. '.repeat(2000);
  const talk = conversation();
  const kinds = { external: [{ name: 'docs__fetch', capabilities: ['untrusted' as const] }], agentTools: new Set<string>() };
  return {
    rows: [
      { check: 'name an IAM caller (role, not session; 3 ARN patterns)', when: 'each request', us: microseconds(() => callerFromIam(arn, iam)) },
      { check: 'name a JWT caller (tenant claim required)', when: 'each request', us: microseconds(() => callerFromClaims(claims, { tenantClaim: 'tenant' })) },
      { check: 'decide a call through 3 policy layers, 20 rules', when: 'each gated call', us: microseconds(() => decisionFor(policy, call)) },
      { check: 'mark a 32 KB external result untrusted', when: 'each external result', us: microseconds(() => markUntrusted(page, 'tool')) },
      { check: 'find untrusted content in 200 messages', when: 'a step with an egress call', us: microseconds(() => holdsUntrusted(talk, kinds), 50, 5) },
    ],
  };
}

export function checksReport(figures: CheckFigures): string {
  const lines = ['\n## The fail-closed checks (median of many calls in this process; target: < 1 ms each)\n', row(['check', 'runs', 'median µs']), row(['---', '---', '---'])];
  for (const r of figures.rows) lines.push(row([r.check, r.when, r.us.toFixed(1)]));
  return lines.join('\n');
}
