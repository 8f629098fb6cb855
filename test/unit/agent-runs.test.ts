import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgentCatalog } from '../../functions/core/definitions/catalog.js';
import { builtinAgents, builtinWorkflows, refOf, versionOf, workspaceRules } from '../../functions/core/definitions/definition.js';
import type { AgentDefinition, WorkflowDefinition } from '../../functions/core/definitions/types.js';
import { AgentDefinitionMissing, type AgentName, agentNamePattern } from '../../functions/core/agents/types.js';
import type { Budget } from '../../functions/core/budgets/types.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { createRun, labelOf, runPlanOf } from '../../functions/core/intake/create.js';
import { createRunBody } from '../../functions/core/intake/request.js';
import type { IntakeDeps, OrchestratorInput } from '../../functions/core/intake/types.js';
import { finalAnswerTool } from '../../functions/core/output/types.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import { summaryInstruction } from '../../functions/core/compaction/context.js';
import type { ModelRequest } from '../../functions/core/model/types.js';
import type { ScriptedTurn } from '../../functions/adapters/model/scripted.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { ExternalTools } from '../../functions/core/tools/external/external-tools.js';
import type { ExternalCallContext, ExternalTool, ToolCatalog, ToolCatalogStore, ToolSource } from '../../functions/core/tools/external/types.js';
import { untrustedDataRules } from '../../functions/core/untrusted/mark.js';
import { marked, memoryCore, say, use } from '../support/agents.js';
import { MemoryRunStore, MemoryAgentDefinitionStore } from '../support/memory.js';
import { RecordingStarter } from '../support/api.js';

const caller = { principal: 'iss#alice', scopes: [] };
const owner = { principal: 'iss#alice' };
const now = '2026-01-01T00:00:00.000Z';
const clock = () => new Date(now);
const externalToolNames = { mcpServers: ['docs', 'web'], lambdaTools: ['word_count', 'shout'] };

function agent(name: string, extra: Partial<AgentDefinition> = {}): AgentDefinition {
  return { name, description: `The ${name}.`, instructions: `You are the ${name}.`, tools: [], ...extra };
}

function workflow(name: string, steps: WorkflowDefinition['steps']): WorkflowDefinition {
  return { name, description: `The ${name} workflow.`, steps };
}

const totalSchema = { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] };

const reviewer = agent('reviewer', {
  instructions: 'Review the files.',
  tools: ['read_file', 'list_files', 'docs__search', 'word_count'],
  model: 'claude-small',
  maxTokens: 2048,
  maxIterations: 10,
  approvals: { tools: ['docs__search'], rules: [{ tool: 'read_file', input: { path: 'secret/**' }, action: 'deny' }] },
  budget: { maxUsd: 2, maxTokens: 50_000 },
});
const extractor = agent('extractor', {
  instructions: 'Extract the total.',
  tools: ['calculator'],
  output: { schema: totalSchema },
  approvals: { tools: ['calculator'], rules: [{ tool: 'calculator', action: 'approve' }] },
  budget: { maxUsd: 0.5 },
});
// Two agents at once, then the assistant, whose one answer is the run's (a last step is one agent).
const reviewFlow = workflow('review-flow', [{ parallel: ['extractor', 'reviewer'] }, 'assistant']);
const catalog = AgentCatalog.from({ agents: [reviewer, extractor], workflows: [reviewFlow] }, { external: externalToolNames });
const assistantRef = refOf(builtinAgents[0]!);

/** Intake on in-memory fakes with the team's catalog; ids are run-1, run-2, … */
function intake(extra: Omit<Partial<IntakeDeps>, 'runs' | 'starter' | 'agentStore'> = {}) {
  let n = 0;
  return {
    runs: new MemoryRunStore(),
    starter: new RecordingStarter(),
    newId: () => `run-${++n}`,
    clock,
    agents: catalog,
    externalToolNames,
    agentStore: new MemoryAgentDefinitionStore(),
    ...extra,
  };
}

/** A body as `POST /runs` validates it for the deployment of `deps`. */
function bodyFor(deps: Pick<IntakeDeps, 'agents' | 'externalToolNames'>, body: Record<string, unknown>) {
  return createRunBody(deps).parse(body);
}

describe('a run of a team\'s agent', () => {
  it('records the agent\'s version and combines its gates, rules and budget with the deployment\'s and the run\'s', async () => {
    const deps = intake({ approvalTools: ['write_file'], budgets: { defaultRun: { maxUsd: 1, maxTokens: 100_000 } } });
    const body = bodyFor(deps, {
      goal: 'Review the repository.',
      agent: 'reviewer',
      maxIterations: 5,
      approvals: { tools: ['edit_file', 'shout'], rules: [{ tool: 'write_file', input: { path: 'notes/**' }, action: 'approve' }] },
      budget: { maxTokens: 80_000 },
    });
    expect(await createRun(body, deps, { caller })).toEqual({ runId: 'run-1', status: 'running', phase: 'idle' });

    expect(deps.runs.runs.get('run-1')).toEqual({
      runId: 'run-1',
      mode: 'single',
      goal: 'Review the repository.',
      owner,
      agent: refOf(reviewer),
      agents: [{ place: 'reviewer', ...refOf(reviewer) }],
      // The deployment's, the agent's and the run's gates: built-in tools first, then external ones by name;
      // each source's gates and rules kept as its layer (the run's rule approves nothing the deployment gates).
      approvals: {
        tools: ['write_file', 'edit_file', 'docs__search', 'shout'],
        rules: [{ tool: 'write_file', input: { path: 'notes/**' }, action: 'approve' }],
        layers: [
          { from: 'deployment', tools: ['write_file'] },
          { from: 'agent:reviewer', tools: ['docs__search'], rules: [{ tool: 'read_file', input: { path: 'secret/**' }, action: 'deny' }] },
          { from: 'run', tools: ['edit_file', 'shout'], rules: [{ tool: 'write_file', input: { path: 'notes/**' }, action: 'approve' }] },
        ],
      },
      // The default's dollars (the run named none), the agent's tokens (stricter than the run's).
      budget: { maxUsd: 1, maxTokens: 50_000 },
      status: 'running',
      phase: 'idle',
      iterations: {},
      usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      createdAt: now,
      updatedAt: now,
    });
    expect(deps.starter.started).toEqual([
      { runId: 'run-1', mode: 'single', agent: 'reviewer', label: 'reviewer', conversationId: 'run/run-1/reviewer', maxIterations: 5, model: '' },
    ]);
  });

  it.each([
    [5, 10, 5],
    [30, 10, 10],
    [undefined, 10, 10],
    [undefined, undefined, 25],
    [40, undefined, 40],
  ])('runs at most min(request %s, agent %s) iterations: %s', async (requested, own, expected) => {
    const limited = agent('limited', own === undefined ? {} : { maxIterations: own });
    const deps = intake({ agents: AgentCatalog.from({ agents: [limited] }) });
    await createRun(bodyFor(deps, { goal: 'Go.', agent: 'limited', ...(requested === undefined ? {} : { maxIterations: requested }) }), deps, { caller });
    expect(deps.starter.started[0]?.maxIterations).toBe(expected);
  });

  it.each<[string, Budget | undefined, Budget | undefined, Budget | undefined]>([
    ['the agent\'s alone', { maxUsd: 2 }, undefined, { maxUsd: 2 }],
    ['the run\'s alone', undefined, { maxUsd: 3 }, { maxUsd: 3 }],
    ['each field from whichever names it', { maxUsd: 2 }, { maxTokens: 1000 }, { maxUsd: 2, maxTokens: 1000 }],
    ['the lower of each field', { maxUsd: 2, maxTokens: 5000 }, { maxUsd: 1, maxTokens: 9000 }, { maxUsd: 1, maxTokens: 5000 }],
    ['the lower of the one field both name, and no other', { maxUsd: 2 }, { maxUsd: 1 }, { maxUsd: 1 }],
    ['the lower of the tokens both name, and no other', { maxTokens: 10 }, { maxTokens: 20 }, { maxTokens: 10 }],
    ['none when neither names one', undefined, undefined, undefined],
  ])('keeps as budget %s', async (_case, own, requested, expected) => {
    const spender = agent('spender', own ? { budget: own } : {});
    const deps = intake({ agents: AgentCatalog.from({ agents: [spender] }) });
    await createRun(bodyFor(deps, { goal: 'Spend.', agent: 'spender', ...(requested ? { budget: requested } : {}) }), deps, { caller });
    const run = deps.runs.runs.get('run-1');
    expect([run?.budget, run !== undefined && 'budget' in run]).toStrictEqual([expected, expected !== undefined]);
  });

  it('answers with the agent\'s own output schema, or the request\'s for an agent without one', async () => {
    const deps = intake();
    await createRun(bodyFor(deps, { goal: 'Sum the invoice.', agent: 'extractor' }), deps, { caller });
    const asked = { schema: { type: 'object', properties: { verdict: { type: 'string' } } } };
    await createRun(bodyFor(deps, { goal: 'Review.', agent: 'reviewer', output: asked }), deps, { caller });
    expect([deps.runs.runs.get('run-1')?.output, deps.runs.runs.get('run-2')?.output]).toEqual([{ schema: totalSchema }, asked]);
  });
});

describe('a run request naming an agent or a workflow', () => {
  const rules = { agents: catalog, externalToolNames };
  const issuesOf = (body: Record<string, unknown>) => {
    const parsed = createRunBody(rules).safeParse(body);
    return parsed.success ? [] : parsed.error.issues.map((issue) => ({ path: issue.path, message: issue.message }));
  };

  it('is refused with the names the deployment has when the agent or workflow is unknown', () => {
    expect(issuesOf({ goal: 'Go.', agent: 'ghost' })).toEqual([{ path: ['agent'], message: 'unknown agent "ghost"; this deployment has assistant, reviewer, extractor' }]);
    expect(issuesOf({ goal: 'Go.', workflow: 'reviewer' })).toEqual([{ path: ['workflow'], message: 'unknown workflow "reviewer"; this deployment has plan-and-build, review-flow' }]);
  });

  it('may not run the Architect or the Coder alone: they work only as plan-and-build', () => {
    // The Coder alone has no plan to start from, and the Architect's plan would answer nothing.
    for (const name of ['architect', 'coder']) {
      expect(issuesOf({ goal: 'Go.', agent: name })).toEqual([{ path: ['agent'], message: `unknown agent "${name}"; this deployment has assistant, reviewer, extractor` }]);
    }
    expect(issuesOf({ goal: 'Go.', workflow: 'plan-and-build' })).toEqual([]);
  });

  it('names at most one of mode, agent and workflow', () => {
    const oneOf = [{ path: ['agent'], message: 'name one of mode, agent or workflow' }];
    expect(issuesOf({ goal: 'Go.', agent: 'reviewer', workflow: 'review-flow' })).toEqual(oneOf);
    expect(issuesOf({ goal: 'Go.', mode: 'single', agent: 'reviewer' })).toEqual(oneOf);
    expect(issuesOf({ goal: 'Go.', agent: 'reviewer' })).toEqual([]);
  });

  it('may not give an output schema to an agent that has its own', () => {
    const output = { schema: { type: 'object' } };
    const own = [{ path: ['output'], message: 'the agent that answers this run has its own output schema; leave output out' }];
    expect(issuesOf({ goal: 'Go.', agent: 'extractor', output })).toEqual(own);
    expect(issuesOf({ goal: 'Go.', agent: 'reviewer', output })).toEqual([]);
    expect(issuesOf({ goal: 'Go.', workflow: 'review-flow', output })).toEqual([]);
    // A workflow whose last agent has a schema answers with it; one whose earlier agent has one does not.
    const flows = AgentCatalog.from({ agents: [reviewer, extractor], workflows: [workflow('sum-last', ['reviewer', 'extractor']), workflow('sum-first', ['extractor', 'reviewer'])] }, { external: externalToolNames });
    const parse = (body: Record<string, unknown>) => createRunBody({ agents: flows, externalToolNames }).safeParse(body).error?.issues.map((i) => ({ path: i.path, message: i.message })) ?? [];
    expect(parse({ goal: 'Go.', workflow: 'sum-last', output })).toEqual(own);
    expect(parse({ goal: 'Go.', workflow: 'sum-first', output })).toEqual([]);
  });

  it('answers a workflow with its last agent\'s own output schema', async () => {
    const flows = AgentCatalog.from({ agents: [reviewer, extractor], workflows: [workflow('sum-last', ['reviewer', 'extractor'])] }, { external: externalToolNames });
    const deps = intake({ agents: flows });
    await createRun(bodyFor(deps, { goal: 'Review, then sum.', workflow: 'sum-last' }), deps, { caller });
    expect(deps.runs.runs.get('run-1')?.output).toEqual({ schema: totalSchema });
  });
});

describe('runPlanOf', () => {
  it('runs the assistant for mode "single", plan-and-build for "multi" or nothing, and a team\'s agent or workflow by name', () => {
    const places = (body: Parameters<typeof runPlanOf>[0]) => {
      const plan = runPlanOf(body, catalog);
      return [plan.mode, plan.agent.name, plan.agents.map((a) => a.place), plan.ref];
    };
    const planAndBuild = { workflow: { name: 'plan-and-build', version: versionOf(builtinWorkflows[0]!) } };
    expect(places({ mode: 'single' })).toEqual(['single', 'assistant', ['single'], { agent: assistantRef }]);
    expect(places({ mode: 'multi' })).toEqual(['multi', 'architect', ['architect', 'coder'], planAndBuild]);
    expect(places({})).toEqual(['multi', 'architect', ['architect', 'coder'], planAndBuild]);
    expect(places({ agent: 'reviewer' })).toEqual(['single', 'reviewer', ['reviewer'], { agent: refOf(reviewer) }]);
    expect(places({ workflow: 'review-flow' })).toEqual(['multi', 'extractor', ['extractor', 'reviewer', 'single'], { workflow: { name: 'review-flow', version: versionOf(reviewFlow) } }]);
  });

  it('numbers each agent of a workflow by its step, and gives the steps to run only for a team\'s workflow', () => {
    const stepsOf = (body: Parameters<typeof runPlanOf>[0]) => {
      const plan = runPlanOf(body, catalog);
      return { agents: plan.agents.map((a) => [a.place, a.step]), steps: plan.steps, hasSteps: 'steps' in plan };
    };
    expect(stepsOf({ workflow: 'review-flow' })).toEqual({
      agents: [
        ['extractor', 0],
        ['reviewer', 0],
        ['single', 1],
      ],
      steps: [
        [
          { agent: 'extractor', label: 'extractor' },
          { agent: 'reviewer', label: 'reviewer' },
        ],
        [{ agent: 'single', label: 'single' }],
      ],
      hasSteps: true,
    });
    // plan-and-build has states of its own in the orchestrator; a one-agent run has no steps at all.
    expect(stepsOf({ mode: 'multi' })).toEqual({ agents: [['architect', 0], ['coder', 1]], steps: undefined, hasSteps: false });
    expect(stepsOf({ agent: 'reviewer' })).toEqual({ agents: [['reviewer', undefined]], steps: undefined, hasSteps: false });
  });
});

describe('a run of a team\'s workflow', () => {
  it('records each agent at its place, and combines every agent\'s gates, rules and budget', async () => {
    const deps = intake({ approvalTools: ['write_file'] });
    await createRun(bodyFor(deps, { goal: 'Review and sum.', workflow: 'review-flow' }), deps, { caller });
    expect(deps.runs.runs.get('run-1')).toEqual({
      runId: 'run-1',
      mode: 'multi',
      goal: 'Review and sum.',
      owner,
      workflow: { name: 'review-flow', version: versionOf(reviewFlow) },
      agents: [
        { place: 'extractor', ...refOf(extractor), step: 0 },
        { place: 'reviewer', ...refOf(reviewer), step: 0 },
        { place: 'single', ...assistantRef, step: 1 },
      ],
      approvals: {
        tools: ['calculator', 'write_file', 'docs__search'],
        layers: [
          { from: 'deployment', tools: ['write_file'] },
          { from: 'agent:extractor', tools: ['calculator'], rules: [{ tool: 'calculator', action: 'approve' }] },
          { from: 'agent:reviewer', tools: ['docs__search'], rules: [{ tool: 'read_file', input: { path: 'secret/**' }, action: 'deny' }] },
        ],
      },
      budget: { maxUsd: 0.5, maxTokens: 50_000 },
      status: 'running',
      phase: 'idle',
      iterations: {},
      usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      createdAt: now,
      updatedAt: now,
    });
    expect(deps.starter.started).toEqual([
      {
        runId: 'run-1',
        mode: 'multi',
        agent: 'extractor',
        label: 'extractor',
        conversationId: 'run/run-1/extractor',
        maxIterations: 25,
        model: '',
        // The orchestrator runs the workflow's steps in order, each step's agents at once, each
        // agent with its own iteration limit (the reviewer's definition says 10).
        steps: [
          [
            { agent: 'extractor', label: 'extractor', maxIterations: 25 },
            { agent: 'reviewer', label: 'reviewer', maxIterations: 10 },
          ],
          [{ agent: 'single', label: 'single', maxIterations: 25 }],
        ],
      },
    ]);
  });

  it.each([
    [5, [5, 5, 5]],
    [15, [15, 10, 15]],
  ])('gives each agent the lower of the request\'s limit (%i) and its own', async (requested, limits) => {
    const deps = intake();
    await createRun(bodyFor(deps, { goal: 'Review and sum.', workflow: 'review-flow', maxIterations: requested }), deps, { caller });
    expect(deps.starter.started[0]?.steps?.flat().map((at) => at.maxIterations)).toEqual(limits);
  });
});

describe('the definitions runs follow', () => {
  it('are stored once per version, however many runs follow them', async () => {
    const deps = intake();
    await createRun(bodyFor(deps, { goal: 'One.', agent: 'reviewer' }), deps, { caller });
    await createRun(bodyFor(deps, { goal: 'Two.', agent: 'reviewer' }), deps, { caller });
    expect(deps.agentStore.puts).toEqual([refOf(reviewer)]);
    // A workflow stores each of its agents, the ones already stored not again.
    await createRun(bodyFor(deps, { goal: 'Three.', workflow: 'review-flow' }), deps, { caller });
    expect(deps.agentStore.puts.map((ref) => ref.name).sort()).toEqual(['assistant', 'extractor', 'reviewer']);
    expect(await deps.agentStore.get(refOf(reviewer))).toEqual(reviewer);
  });

  it('are stored by a later run when storing failed', async () => {
    const deps = intake();
    const put = deps.agentStore.put.bind(deps.agentStore);
    let failures = 1;
    deps.agentStore.put = async (ref, definition) => {
      if (failures-- > 0) throw new Error('throttled');
      return put(ref, definition);
    };
    await expect(createRun(bodyFor(deps, { goal: 'One.', agent: 'reviewer' }), deps, { caller })).rejects.toThrow('throttled');
    expect(deps.runs.runs.size).toBe(0);
    await createRun(bodyFor(deps, { goal: 'Two.', agent: 'reviewer' }), deps, { caller });
    expect(await deps.agentStore.get(refOf(reviewer))).toEqual(reviewer);
  });

  it('are stored again when the deployment changes one, and a run started before keeps the version it started with', async () => {
    const deps = intake();
    await createRun(bodyFor(deps, { goal: 'Before.', agent: 'reviewer' }), deps, { caller });
    const changed = { ...reviewer, instructions: 'Review the files, then say what to fix first.' };
    const redeployed = { ...deps, agents: AgentCatalog.from({ agents: [changed, extractor] }, { external: externalToolNames }) };
    await createRun(bodyFor(redeployed, { goal: 'After.', agent: 'reviewer' }), redeployed, { caller });

    expect(deps.agentStore.puts).toEqual([refOf(reviewer), refOf(changed)]);
    expect(refOf(changed).version).not.toBe(refOf(reviewer).version);
    expect([deps.runs.runs.get('run-1')?.agents, deps.runs.runs.get('run-2')?.agents]).toEqual([
      [{ place: 'reviewer', ...refOf(reviewer) }],
      [{ place: 'reviewer', ...refOf(changed) }],
    ]);
    expect([await deps.agentStore.get(refOf(reviewer)), await deps.agentStore.get(refOf(changed))]).toEqual([reviewer, changed]);
  });
});

describe('labelOf', () => {
  it('keeps a place of up to 16 characters, and shortens a longer one to 16 that stay apart', () => {
    expect(labelOf('a'.repeat(16))).toBe('a'.repeat(16));
    expect(labelOf('research-assistant')).toMatch(/^researc-[0-9a-f]{8}$/);
    expect(labelOf('research-assistant-2')).not.toBe(labelOf('research-assistant'));
  });

  it('fits any agent name into an execution name of at most 80 characters', () => {
    fc.assert(
      fc.property(fc.stringMatching(agentNamePattern), (place) => {
        const label = labelOf(place);
        // `<runId>-<label>-<iteration>`: a run id of 56, an iteration of at most 200.
        expect(`${'r'.repeat(56)}-${label}-200`.length).toBeLessThanOrEqual(80);
        expect(label).toMatch(/^[a-z0-9-]{1,16}$/);
        if (place.length <= 16) expect(label).toBe(place);
      }),
    );
  });
});

// ── The steps of a team's agent ────────────────────────────────────────────

class MemoryCatalogStore implements ToolCatalogStore {
  readonly catalogs = new Map<string, ToolCatalog>();
  async getCatalog(runId: string) {
    return this.catalogs.get(runId);
  }
  async putCatalog(runId: string, catalog: ToolCatalog) {
    const stored = this.catalogs.get(runId);
    if (stored) return stored;
    this.catalogs.set(runId, structuredClone(catalog));
    return catalog;
  }
}

/** A source of external tools that records the calls it runs; with no tools it cannot be listed. */
class FakeSource implements ToolSource {
  readonly calls: string[] = [];
  constructor(
    readonly id: string,
    readonly names: string[],
    readonly agents: readonly AgentName[] = ['single', 'coder'],
  ) {}
  async list(): Promise<ExternalTool[]> {
    if (this.names.length === 0) throw new Error('connect ECONNREFUSED 127.0.0.1:9');
    return this.names.map((name) => ({
      name,
      description: `The ${name} tool.`,
      inputSchema: { type: 'object' },
      source: this.id,
      target: name,
      agents: [...this.agents],
    }));
  }
  async call(tool: ExternalTool, _input: unknown, _context: ExternalCallContext) {
    this.calls.push(tool.name);
    return { content: `${tool.name} ran`, isError: false };
  }
}

const researcher = agent('researcher', {
  instructions: 'Research the question.',
  tools: ['calculator', 'docs__search', 'word_count', 'web__*'],
  model: 'claude-small',
  maxTokens: 2048,
});
const quiet = agent('quiet', { instructions: 'Read quietly.', tools: ['read_file'] });
const teamCatalog = AgentCatalog.from({ agents: [researcher, quiet, extractor] }, { external: externalToolNames });

/**
 * The steps on in-memory fakes, with external tools from `mcp:docs`, `lambda` and `mcp:web`
 * (down), and `start`, which makes a run through intake as `POST /runs` does and answers what
 * the orchestrator was started with.
 */
async function agentCore() {
  const core = await memoryCore();
  const docs = new FakeSource('mcp:docs', ['docs__search', 'docs__fetch']);
  // Its configuration names the researcher, which lists word_count only: a team's agent has the tools its definition lists.
  const lambda = new FakeSource('lambda', ['word_count', 'shout'], ['single', 'coder', 'researcher']);
  const web = new FakeSource('mcp:web', []);
  const agentStore = new MemoryAgentDefinitionStore();
  const deps = { ...core.deps, agentStore, externalTools: new ExternalTools([docs, lambda, web], new MemoryCatalogStore(), { clock }) };
  let n = 0;
  const start = async (body: Record<string, unknown>, agents: AgentCatalog = teamCatalog): Promise<OrchestratorInput> => {
    const starter = new RecordingStarter();
    const intakeDeps = { runs: core.runs, starter, newId: () => `agent-run-${++n}`, clock, agents, externalToolNames, agentStore };
    await createRun(bodyFor(intakeDeps, body), intakeDeps, { caller });
    const [started] = starter.started;
    if (!started) throw new Error('the run was not started');
    return started;
  };
  /** The step's input for the first model call of the run `started` names. */
  const first = (started: OrchestratorInput) => ({ runId: started.runId, agent: started.agent, iteration: 0, model: started.model });
  return { ...core, deps, docs, lambda, agentStore, start, first };
}

describe('the inference step of a team\'s agent', () => {
  it('sends its instructions and only its tools: its built-in ones, then the external ones it lists', async () => {
    const core = await agentCore();
    core.model.addTurn(say('Done.'), say('Done.'));
    await inferenceStep(core.first(await core.start({ goal: 'What is 2+2?', agent: 'researcher' })), core.deps);
    await inferenceStep(core.first(await core.start({ goal: 'Read a.txt.', agent: 'quiet' })), core.deps);

    const [research, read] = core.model.requests;
    expect({ system: research?.system, tools: research?.tools.map((t) => t.name) }).toEqual({
      // It lists a tool of mcp:web, which could not be listed: the note says so.
      system: `Research the question.\n\nSome external tools could not be listed when this run began and are not offered: mcp:web.\n\n${untrustedDataRules}`,
      tools: ['calculator', 'docs__search', 'word_count'],
    });
    expect({ system: read?.system, tools: read?.tools.map((t) => t.name) }).toEqual({ system: `Read quietly.\n\n${workspaceRules}`, tools: ['read_file'] });
    expect(research?.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'What is 2+2?' }] });
  });

  it('calls the agent\'s model with its answer size, unless the run names a model', async () => {
    const core = await agentCore();
    core.model.addTurn(say('a'), say('b'), say('c'));
    await inferenceStep(core.first(await core.start({ goal: 'Go.', agent: 'researcher' })), core.deps);
    await inferenceStep(core.first(await core.start({ goal: 'Go.', agent: 'researcher', model: 'claude-big' })), core.deps);
    await inferenceStep(core.first(await core.start({ goal: 'Go.', agent: 'quiet' })), core.deps);
    // quiet names neither: the deployment's model and size (memoryCore's settings).
    expect(core.model.requests.map((r) => [r.model, r.maxTokens])).toEqual([
      ['claude-small', 2048],
      ['claude-big', 2048],
      ['claude-test', 1024],
    ]);
  });

  it('offers the agent\'s own output schema as final_answer, and its answer is the run\'s output', async () => {
    const core = await agentCore();
    core.model.addTurn(use(['toolu_1', finalAnswerTool, { total: 42 }]));
    const started = await core.start({ goal: 'Sum the invoice.', agent: 'extractor' });
    expect((await inferenceStep(core.first(started), core.deps)).stopReason).toBe('end_turn');
    expect(core.model.requests[0]?.tools.map((t) => t.name)).toEqual(['calculator', finalAnswerTool]);
    expect(core.runs.runs.get(started.runId)?.result?.output).toEqual({ total: 42 });
  });

  it('keeps the prompt of the version a run started with after the deployment changes the agent, from the stored version', async () => {
    const core = await agentCore();
    const before = agent('changing', { instructions: 'The first instructions.', tools: ['calculator'] });
    const after = { ...before, instructions: 'The second instructions.', tools: ['read_file'] };
    const old = await core.start({ goal: 'Go.', agent: 'changing' }, AgentCatalog.from({ agents: [before] }));
    const fresh = await core.start({ goal: 'Go.', agent: 'changing' }, AgentCatalog.from({ agents: [after] }));
    core.model.addTurn(say('a'), say('b'));
    await inferenceStep(core.first(fresh), core.deps);
    await inferenceStep(core.first(old), core.deps);

    expect(core.model.requests.map((r) => [r.system, r.tools.map((t) => t.name)])).toEqual([
      [`The second instructions.\n\n${workspaceRules}`, ['read_file']],
      ['The first instructions.', ['calculator']],
    ]);
    expect(core.agentStore.gets).toEqual([refOf(after), refOf(before)]);
  });

  it('fails a run whose version is stored nowhere, before the model is asked', async () => {
    const core = await agentCore();
    const lost = agent('lost', { instructions: 'Lost instructions.' });
    const started = await core.start({ goal: 'Go.', agent: 'lost' }, AgentCatalog.from({ agents: [lost] }));
    core.agentStore.definitions.clear();
    await expect(inferenceStep(core.first(started), core.deps)).rejects.toThrow(
      new AgentDefinitionMissing(`Version ${refOf(lost).version} of agent "lost" is not stored.`),
    );
    expect(core.model.requests).toEqual([]);
  });
});

describe('the tool step of a team\'s agent', () => {
  it('answers a call of a built-in tool the agent lacks with an error result, and runs nothing', async () => {
    const core = await agentCore();
    core.model.addTurn(use(['toolu_w', 'write_file', { path: 'a.txt', content: 'x' }], ['toolu_c', 'calculator', { operation: 'add', a: 1, b: 2 }], ['toolu_r', 'read_file', { path: 'a.txt' }]));
    const started = await core.start({ goal: 'Write a.txt.', agent: 'quiet' });
    const step = await inferenceStep(core.first(started), core.deps);
    const run = (toolUseId: string) => toolStep({ runId: started.runId, agent: started.agent, seq: step.seq, toolUseId }, core.deps);

    expect([await run('toolu_w'), await run('toolu_c'), await run('toolu_r')]).toEqual([
      { toolUseId: 'toolu_w', isError: true },
      { toolUseId: 'toolu_c', isError: true },
      { toolUseId: 'toolu_r', isError: true },
    ]);
    const turn = await core.conversations.loadTurn(conversationIdOf(started.runId, 'quiet'), step.seq);
    expect(turn?.results.map((r) => r?.content)).toEqual([
      'Unknown tool "write_file". Available tools: read_file.',
      'Unknown tool "calculator". Available tools: read_file.',
      // Its own tool runs (and finds no file: nothing was written).
      expect.stringContaining('a.txt'),
    ]);
    expect(core.workspaces.get(started.runId)?.files.size ?? 0).toBe(0);
  });

  it('runs the external tools the agent lists, whatever their configuration names, and no other', async () => {
    const core = await agentCore();
    core.model.addTurn(
      use(['toolu_s', 'docs__search', {}], ['toolu_f', 'docs__fetch', {}], ['toolu_w', 'word_count', {}], ['toolu_x', 'shout', {}], ['toolu_r', 'read_file', { path: 'a.txt' }]),
    );
    const started = await core.start({ goal: 'Research.', agent: 'researcher' });
    const step = await inferenceStep(core.first(started), core.deps);
    const results = [];
    for (const id of ['toolu_s', 'toolu_f', 'toolu_w', 'toolu_x', 'toolu_r']) results.push(await toolStep({ runId: started.runId, agent: started.agent, seq: step.seq, toolUseId: id }, core.deps));

    expect(results.map((r) => r.isError)).toEqual([false, true, false, true, true]);
    expect([core.docs.calls, core.lambda.calls]).toEqual([['docs__search'], ['word_count']]);
    const turn = await core.conversations.loadTurn(conversationIdOf(started.runId, 'researcher'), step.seq);
    expect(turn?.results.map((r) => r?.content)).toEqual([
      marked('docs__search', 'docs__search ran'),
      'Unknown tool "docs__fetch". Available tools: calculator, docs__search, word_count.',
      marked('word_count', 'word_count ran'),
      'Unknown tool "shout". Available tools: calculator, docs__search, word_count.',
      'Unknown tool "read_file". Available tools: calculator, docs__search, word_count.',
    ]);
  });

  it('runs the built-in assistant\'s tools as before for a run of mode "single"', async () => {
    const core = await agentCore();
    core.model.addTurn(use(['toolu_f', 'docs__fetch', {}], ['toolu_c', 'calculator', { operation: 'add', a: 1, b: 2 }]));
    const started = await core.start({ goal: 'Fetch.', mode: 'single' });
    const step = await inferenceStep(core.first(started), core.deps);
    for (const id of ['toolu_f', 'toolu_c']) expect((await toolStep({ runId: started.runId, agent: 'single', seq: step.seq, toolUseId: id }, core.deps)).isError).toBe(false);
    expect(core.docs.calls).toEqual(['docs__fetch']);
    expect(core.agentStore.gets).toEqual([]);
  });
});

describe('compaction for a team\'s agent', () => {
  const isSummaryRequest = (request: ModelRequest) => JSON.stringify(request.messages.at(-1)?.content).includes(summaryInstruction);
  /** A calculator call after about 250 tokens of reasoning (the scripted model counts 4 characters a token). */
  const thinkThenAdd = (id: string, a: number): ScriptedTurn => ({
    content: [{ type: 'text', text: `Adding ${a}. ${'x'.repeat(1_000)}` }, ...use([id, 'calculator', { operation: 'add', a, b: 1 }]).content],
  });

  /** The requests of a run of an agent with answers of up to `maxTokens`, in a window of 1,000 tokens where the deployment answers in 100. */
  async function requestsOf(maxTokens: number | undefined): Promise<ModelRequest[]> {
    const core = await agentCore();
    core.deps.context = { windowTokens: 1_000, compactAt: 0.8, keepShare: 0.3 };
    core.deps.settings = { model: 'claude-test', maxTokens: 100 };
    const script = [thinkThenAdd('toolu_1', 1), thinkThenAdd('toolu_2', 2), say('The total is 5.')];
    const next = (request: ModelRequest) => (isSummaryRequest(request) ? say('Goal: add up. Nothing done yet.') : (script.shift() ?? say('Out of script.')));
    core.model.addTurn(...Array.from({ length: 6 }, () => next));
    const wordy = agent('wordy', { instructions: 'Add up, one number at a time.', tools: ['calculator'], ...(maxTokens ? { maxTokens } : {}) });
    const started = await core.start({ goal: 'Add up.', agent: 'wordy' }, AgentCatalog.from({ agents: [wordy] }));
    await runAgentLoop({ runId: started.runId, agent: started.agent, maxIterations: 5 }, core.deps);
    return core.model.requests;
  }

  it('leaves room in the window for the agent\'s own answer size, not the deployment\'s', async () => {
    // About 290 tokens after the first turn: room for 100 more, not for 800.
    const [roomy, wide] = [await requestsOf(undefined), await requestsOf(800)];
    expect(roomy.map((r) => [isSummaryRequest(r), r.maxTokens])).toEqual([
      [false, 100],
      [false, 100],
      [false, 100],
    ]);
    // Each turn of about 290 tokens leaves no room for 800 more: the older turns are summarized before each step.
    expect(wide.map((r) => isSummaryRequest(r))).toEqual([false, true, false, true, false]);
    expect(wide.filter((r) => !isSummaryRequest(r)).map((r) => r.maxTokens)).toEqual([800, 800, 800]);
  });
});
