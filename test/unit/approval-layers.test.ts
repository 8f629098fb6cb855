import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ScriptedModel } from '../../functions/adapters/model/scripted.js';
import { approvalPolicy, decisionFor, layer, layeredPolicy, ruleFor } from '../../functions/core/approvals/policy.js';
import { requestApproval } from '../../functions/core/approvals/request.js';
import { intakeEvent } from '../../functions/core/intake/events.js';
import { type ApprovalPolicy, type ApprovalRule, type RuleAction, RunApprovals } from '../../functions/core/approvals/types.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { unlistedPolicyTools } from '../../functions/core/tools/external/names.js';
import { readEnv } from '../../functions/wiring/wire.js';
import { as, memoryApi } from '../support/api.js';
import { memoryCore, use } from '../support/agents.js';
import { MemoryApprovalStore } from '../support/memory.js';

const alice = as('alice', { tenant: 'acme' });
const rita = as('rita', { tenant: 'acme', scopes: ['approve'] });
const clock = () => new Date('2026-01-01T00:00:00.000Z');

/** The model of `runId` calls `calls` at its first step; each call goes through the approval request step, as the loop runs it. */
async function callThrough(api: ReturnType<typeof memoryApi>, runId: string, ...calls: [id: string, name: string, input: unknown][]) {
  const model = new ScriptedModel();
  model.addTurn(use(...calls));
  const deps = {
    conversations: api.conversations,
    runs: api.runs,
    model,
    settings: { model: 'claude-test', maxTokens: 1024 },
    workspaceFor: api.workspace,
    approvals: api.approvals,
    clock,
  };
  const step = await inferenceStep({ runId, agent: 'single', iteration: 0 }, deps);
  const outcomes = [];
  for (const call of step.toolCalls.filter((c) => c.needsApproval)) {
    outcomes.push([call.id, (await requestApproval({ step: 'request', runId, agent: 'single', seq: step.seq ?? 1, toolUseId: call.id }, deps)).decided] as const);
  }
  return { gated: step.toolCalls.map((c) => [c.id, c.needsApproval] as const), outcomes };
}

const aguiInput = (runId: string, stepwise: Record<string, unknown>) => ({
  threadId: `thread-${runId}`,
  runId,
  state: {},
  messages: [{ id: 'm1', role: 'user', content: 'Write a.md.' }],
  tools: [],
  context: [],
  forwardedProps: { stepwise },
});

describe('a run\'s own approval rules (DESIGN §16: they only add control)', () => {
  const writeA: [string, string, unknown] = ['toolu_w', 'write_file', { path: 'a.md', content: 'A' }];

  it('cannot approve a call the deployment gates: under separateReviewer the call waits, and only another reviewer decides it', async () => {
    const api = memoryApi({ approvalTools: ['write_file'], access: { separateReviewer: true } });
    const created = await api.request('POST', '/runs', { goal: 'Write a.md.', mode: 'single', approvals: { rules: [{ tool: 'write_file', action: 'approve' }] } }, alice);
    expect(created.status).toBe(202);
    const runId = String(created.body.runId);

    expect(await callThrough(api, runId, writeA)).toEqual({ gated: [['toolu_w', true]], outcomes: [['toolu_w', false]] });
    expect((await api.approvals.get(runId, 'toolu_w'))?.decision).toBeUndefined();
    expect((await api.request('POST', `/runs/${runId}/approvals/toolu_w`, { decision: 'approve' }, alice)).status).toBe(403);
    expect((await api.request('POST', `/runs/${runId}/approvals/toolu_w`, { decision: 'approve' }, rita)).body).toMatchObject({ decision: 'approve', decidedBy: 'test#rita' });
    // Nor can a request name layers of its own.
    const forged = { rules: [{ tool: 'write_file', action: 'approve' }], layers: [{ from: 'deployment', tools: [] }] };
    expect(await api.request('POST', '/runs', { goal: 'Write a.md.', mode: 'single', approvals: forged }, alice)).toMatchObject({ status: 400, body: { error: { issues: [{ path: 'approvals' }] } } });
  });

  it('cannot approve a call the deployment gates when the run comes through POST /agui forwardedProps', async () => {
    const api = memoryApi({ approvalTools: ['write_file'], access: { separateReviewer: true } });
    const started = await api.request('POST', '/agui', aguiInput('agui-1', { approvals: { rules: [{ tool: 'write_file', action: 'approve' }] } }), alice);
    expect(started.status).toBe(200);
    expect(await callThrough(api, 'agui-1', writeA)).toEqual({ gated: [['toolu_w', true]], outcomes: [['toolu_w', false]] });
    expect((await api.approvals.get('agui-1', 'toolu_w'))?.decision).toBeUndefined();
  });

  it('cannot approve a call the deployment gates when the run comes from a run-requested event', async () => {
    const api = memoryApi({ approvalTools: ['write_file'] });
    const event = {
      id: 'e1',
      'detail-type': 'Stepwise Run Requested',
      source: 'app.orders',
      account: '123456789012',
      detail: { goal: 'Write a.md.', mode: 'single', approvals: { rules: [{ tool: 'write_file', action: 'approve' }] } },
    };
    const deps = { runs: api.runs, starter: api.starter, newId: () => 'unused', approvalTools: ['write_file'], deadLetters: { send: async () => undefined } };
    expect(await intakeEvent(event, deps)).toEqual({ accepted: true, runId: 'evt-e1' });
    expect(await callThrough(api, 'evt-e1', writeA)).toEqual({ gated: [['toolu_w', true]], outcomes: [['toolu_w', false]] });
  });

  it('approves the calls the run gated itself, and a deny rule tightens a gate of the deployment', async () => {
    const api = memoryApi({ approvalTools: ['edit_file'] });
    const approvals = {
      tools: ['write_file'],
      rules: [
        { tool: 'write_file', input: { path: 'notes/**' }, action: 'approve' },
        { tool: 'edit_file', input: { path: 'secrets/**' }, action: 'deny' },
        { tool: 'edit_file', action: 'approve' },
      ],
    };
    const runId = String((await api.request('POST', '/runs', { goal: 'Edit.', mode: 'single', approvals })).body.runId);
    const edit = (id: string, path: string): [string, string, unknown] => [id, 'edit_file', { path, old_string: 'a', new_string: 'b' }];
    const { outcomes } = await callThrough(api, runId, ['toolu_n', 'write_file', { path: 'notes/a.md', content: 'A' }], edit('toolu_s', 'secrets/k'), edit('toolu_e', 'a.md'));
    expect(outcomes).toEqual([
      ['toolu_n', true],
      ['toolu_s', true],
      ['toolu_e', false],
    ]);
    expect((await api.approvals.list(runId)).map((a) => [a.toolUseId, a.decision, a.decidedBy])).toEqual([
      ['toolu_n', 'approve', 'rule:0'],
      ['toolu_s', 'deny', 'rule:1'],
      ['toolu_e', undefined, undefined],
    ]);
  });
});

describe('the decision of a run\'s layered policy', () => {
  const names = ['write_file', 'edit_file', 'calculator', 'docs__search', 'docs__later'];
  const entry = fc.constantFrom('write_file', 'edit_file', 'calculator', 'docs__search', 'docs__*');
  const rule = fc.record(
    { tool: entry, input: fc.dictionary(fc.constantFrom('path', 'q'), fc.constantFrom('notes/**', '*.md', '**'), { maxKeys: 1 }), action: fc.constantFrom('approve', 'deny', 'ask') },
    { requiredKeys: ['tool', 'action'] },
  ) as fc.Arbitrary<ApprovalRule>;
  const policy = fc.record({ tools: fc.uniqueArray(entry, { maxLength: 3 }), rules: fc.array(rule, { maxLength: 4 }) }) as fc.Arbitrary<ApprovalPolicy>;
  const aCall = fc.record({ name: fc.constantFrom(...names), input: fc.record({ path: fc.constantFrom('notes/a.md', 'a.md', 'src/x.ts'), q: fc.constantFrom('a.md', 'x') }, { requiredKeys: [] }) });
  const strictness = (action: RuleAction) => ['approve', 'ask', 'deny'].indexOf(action);

  it('is never looser than the deployment\'s policy alone or any agent definition\'s alone, whatever the run asks', () => {
    fc.assert(
      fc.property(policy, fc.array(policy, { maxLength: 2 }), policy, aCall, (deployment, definitions, run, call) => {
        const built = layeredPolicy([layer('deployment', deployment), ...definitions.map((d, i) => layer(`agent:a${i}`, d)), layer('run', run)]);
        // As stored and read back.
        const stored = built && RunApprovals.parse(JSON.parse(JSON.stringify(built)));
        const got = stored ? decisionFor(stored, call).action : 'approve';
        for (const alone of [deployment, ...definitions]) expect(strictness(got)).toBeGreaterThanOrEqual(strictness(ruleFor(alone, call).action));
        // The run's own answer tightens too.
        expect(strictness(got)).toBeGreaterThanOrEqual(strictness(ruleFor(run, call).action));
      }),
      { numRuns: 500 },
    );
  });

  it('is the run\'s own answer when only the run gates and rules, as a policy of one layer', () => {
    fc.assert(
      fc.property(policy, aCall, (run, call) => {
        const built = layeredPolicy([layer('deployment', { tools: [] }), layer('run', run)]);
        const alone = ruleFor(run, call);
        expect(built ? decisionFor(built, call) : { action: 'approve' }).toEqual({ action: alone.action, ...(alone.index === undefined ? {} : { by: `rule:${alone.index}` }) });
      }),
    );
  });

  it('names the rule of an agent definition that decided, and reads a record made before layers with its rules only tightening', () => {
    const definition = layer('agent:reviewer', { tools: ['calculator'], rules: [{ tool: 'calculator', action: 'approve' }] });
    const built = layeredPolicy([layer('deployment', { tools: ['write_file'] }), definition, layer('run', { tools: [], rules: [{ tool: 'write_file', action: 'approve' }] })]);
    expect(built && decisionFor(built, { name: 'calculator', input: {} })).toEqual({ action: 'approve', by: 'agent:reviewer:rule:0' });
    expect(built && decisionFor(built, { name: 'write_file', input: {} })).toEqual({ action: 'ask' });

    const legacy = RunApprovals.parse({ tools: ['write_file'], rules: [{ tool: 'write_file', action: 'approve' }, { tool: 'calculator', action: 'deny' }] });
    expect(decisionFor(legacy, { name: 'write_file', input: {} })).toEqual({ action: 'ask' });
    expect(decisionFor(legacy, { name: 'calculator', input: {} })).toEqual({ action: 'deny', by: 'rule:1' });
  });
});

describe('<server>__* in gates and rules', () => {
  const external = { mcpServers: ['docs', 'my-search'], lambdaTools: ['word_count'] };

  it('is a name a policy may give for a configured server, and nothing else with a "*" is', () => {
    const parse = (tool: string) => approvalPolicy(external).safeParse({ tools: [tool], rules: [{ tool, action: 'deny' }] }).success;
    expect(['docs__*', 'my-search__*'].map(parse)).toEqual([true, true]);
    expect(['nosuch__*', 'docs__a*', 'docs*', '*', 'docs___*', 'word_count__*', 'docs__**'].map(parse)).toEqual([false, false, false, false, false, false, false]);
    expect(readEnv({ STEPWISE_TABLE: 't', STEPWISE_BUCKET: 'b', STEPWISE_MCP_SERVER_NAMES: 'docs', STEPWISE_APPROVAL_TOOLS: 'docs__*' }).STEPWISE_APPROVAL_TOOLS).toEqual(['docs__*']);
  });

  it('covers every tool of its server, a tool the server lists only later included, and no other server\'s or tool\'s', () => {
    const gate = { tools: ['docs__*'] };
    const asked = ['docs__search', 'docs__added_later', 'docs___x'].map((name) => ruleFor(gate, { name, input: {} }).action);
    expect(asked).toEqual(['ask', 'ask', 'ask']);
    const free = ['docsx__search', 'my-docs__search', 'docs', 'docs_search', 'word_count', 'write_file'].map((name) => ruleFor(gate, { name, input: {} }).action);
    expect(free).toEqual(['approve', 'approve', 'approve', 'approve', 'approve', 'approve']);
    const ruled = { tools: [], rules: [{ tool: 'docs__*', input: { url: 'https://internal/**' }, action: 'deny' as const }] };
    expect(ruleFor(ruled, { name: 'docs__fetch', input: { url: 'https://internal/secrets' } })).toEqual({ action: 'deny', index: 0 });
    expect(ruleFor(ruled, { name: 'docs__fetch', input: { url: 'https://example.com/' } })).toEqual({ action: 'approve' });
  });

  it('gates at the inference step a call of a tool no catalog listed when the run began, and is never an unlisted name', async () => {
    const core = await memoryCore('Fetch.');
    const approvals = new MemoryApprovalStore();
    approvals.policies.set('run-1', ['docs__*']);
    core.model.addTurn(use(['toolu_1', 'docs__fetch', { url: 'https://example.com/' }], ['toolu_2', 'calculator', { operation: 'add', a: 1, b: 2 }]));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, { ...core.deps, approvals });
    expect(step.toolCalls).toEqual([
      { id: 'toolu_1', name: 'docs__fetch', needsApproval: true },
      { id: 'toolu_2', name: 'calculator', needsApproval: false },
    ]);
    const catalog = { tools: [{ name: 'docs__search', description: '', inputSchema: {}, source: 'mcp:docs', target: 'search', agents: ['single' as const] }], unavailable: [] };
    expect(unlistedPolicyTools(['docs__*', 'docs__serach'], catalog)).toEqual(['docs__serach']);
  });
});
