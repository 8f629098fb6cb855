import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { AgentCatalog, type AgentCatalogRules, type AgentConfig } from '../../functions/core/definitions/catalog.js';
import { builtinAgents, builtinWorkflows, refOf, reservedNames, versionOf, workspaceRules } from '../../functions/core/definitions/definition.js';
import type { AgentDefinition, WorkflowDefinition } from '../../functions/core/definitions/types.js';
import { agentProfile, profileFor, profileOf } from '../../functions/core/agents/profiles.js';
import { definitionFor } from '../../functions/core/agents/read.js';
import type { Run } from '../../functions/core/runs/types.js';
import { AgentConfigInvalid, AgentDefinitionMissing, type AgentRef } from '../../functions/core/agents/types.js';
import { toolNames } from '../../functions/core/tools/builtin/builtin.js';
import { MemoryAgentDefinitionStore } from '../support/memory.js';

/** A deployment with two MCP servers, two Lambda tools and two models a definition may name. */
const rules: AgentCatalogRules = {
  external: { mcpServers: ['docs', 'web'], lambdaTools: ['word_count', 'shout'] },
  allowedModels: ['claude-small', 'claude-big'],
};

/** What a refusal lists as the deployment's tools under `rules`. */
const deploymentTools = 'calculator, read_file, write_file, list_files, edit_file, word_count, shout, docs__*, web__*, and agent:<name>';

function agent(name: string, extra: Partial<AgentDefinition> = {}): AgentDefinition {
  return { name, description: `The ${name}.`, instructions: `You are the ${name}.`, tools: [], ...extra };
}

function workflow(name: string, steps: WorkflowDefinition['steps']): WorkflowDefinition {
  return { name, description: `The ${name} workflow.`, steps };
}

/** The one-line message a configuration is refused with (failing the test when it is accepted). */
function refusalOf(config: AgentConfig, deployment: AgentCatalogRules = rules): string {
  try {
    AgentCatalog.from(config, deployment);
  } catch (error) {
    expect(error).toBeInstanceOf(AgentConfigInvalid);
    const { message } = error as AgentConfigInvalid;
    expect(message).not.toContain('\n');
    return message;
  }
  throw new Error(`accepted: ${JSON.stringify(config)}`);
}

describe('AgentCatalog.from refuses, with one line naming the definition and the field', () => {
  const helper = agent('helper');
  const joiner = agent('joiner');
  const cases: [rule: string, config: AgentConfig, message: string][] = [
    // tools
    ['a tool the deployment lacks', { agents: [agent('helper', { tools: ['calculator', 'shout-loud'] })] }, `agent "helper": tools[1] "shout-loud" is not a tool of this deployment (it has ${deploymentTools})`],
    ['a tool of an MCP server not configured', { agents: [agent('helper', { tools: ['nosuch__search'] })] }, `agent "helper": tools[0] "nosuch__search" is not a tool of this deployment (it has ${deploymentTools})`],
    ['every tool of an MCP server not configured', { agents: [agent('helper', { tools: ['nosuch__*'] })] }, `agent "helper": tools[0] "nosuch__*" is not a tool of this deployment (it has ${deploymentTools})`],
    ['an MCP tool part no tool name can have', { agents: [agent('helper', { tools: ['docs__a.b'] })] }, `agent "helper": tools[0] "docs__a.b" is not a tool of this deployment (it has ${deploymentTools})`],
    ['an MCP entry without a tool part', { agents: [agent('helper', { tools: ['docs__'] })] }, `agent "helper": tools[0] "docs__" is not a tool of this deployment (it has ${deploymentTools})`],
    ['a server name without its "__"', { agents: [agent('helper', { tools: ['docs'] })] }, `agent "helper": tools[0] "docs" is not a tool of this deployment (it has ${deploymentTools})`],
    ['an agent the deployment lacks', { agents: [helper, agent('lead', { tools: ['agent:ghost'] })] }, 'agent "lead": tools[0] "agent:ghost" names no agent this deployment has (assistant, helper, lead)'],
    ['the Architect as a tool', { agents: [agent('lead', { tools: ['agent:architect'] })] }, 'agent "lead": tools[0] "agent:architect" names no agent this deployment has (assistant, lead)'],
    ['the Coder as a tool', { agents: [agent('lead', { tools: ['agent:coder'] })] }, 'agent "lead": tools[0] "agent:coder" names no agent this deployment has (assistant, lead)'],
    ['a workflow as an agent tool', { agents: [agent('lead', { tools: ['agent:plan-and-build'] })] }, 'agent "lead": tools[0] "agent:plan-and-build" names no agent this deployment has (assistant, lead)'],
    ['finish_plan', { agents: [agent('helper', { tools: ['read_file', 'finish_plan'] })] }, 'agent "helper": tools[1] "finish_plan" is the built-in Architect\'s tool; an agent answers with text or its output schema'],
    ['a tool listed twice', { agents: [agent('helper', { tools: ['calculator', 'read_file', 'calculator'] })] }, 'agent "helper": tools[2] "calculator" is listed twice'],
    ['an agent listed twice', { agents: [agent('helper', { tools: ['agent:assistant', 'agent:assistant'] })] }, 'agent "helper": tools[1] "agent:assistant" is listed twice'],
    // model, approvals, output
    ['a model the deployment does not allow', { agents: [agent('helper', { model: 'gpt-9' })] }, 'agent "helper": model "gpt-9" is not one this deployment allows (claude-small, claude-big)'],
    ['approvals gating an unknown tool', { agents: [agent('helper', { approvals: { tools: ['write_file', 'shout-loud'] } })] }, 'agent "helper": approvals names "shout-loud", which is not a tool of this deployment'],
    ['an approval rule for an unknown tool', { agents: [agent('helper', { approvals: { tools: [], rules: [{ tool: 'nosuch__x', action: 'deny' }] } })] }, 'agent "helper": approvals names "nosuch__x", which is not a tool of this deployment'],
    ['an output schema that is not an object', { agents: [agent('helper', { output: { schema: { type: 'string' } } })] }, 'agent "helper": output.schema: must describe an object: "type": "object" at the top (the answer is the input of a tool, which is an object)'],
    // names
    ['a name the built-in workflow holds', { agents: [agent('plan-and-build')] }, `agent "plan-and-build": name is taken by a built-in (${reservedNames.join(', ')})`],
    ['a workflow named after a mode', { workflows: [workflow('single', ['assistant'])] }, `workflow "single": name is taken by a built-in (${reservedNames.join(', ')})`],
    ['an agent defined twice', { agents: [helper, agent('helper', { description: 'Another.' })] }, 'agent "helper": name is defined twice'],
    ['a workflow defined twice', { workflows: [workflow('flow', ['assistant']), workflow('flow', ['assistant'])] }, 'workflow "flow": name is defined twice'],
    ['a workflow named as an agent', { agents: [helper], workflows: [workflow('helper', ['assistant'])] }, 'workflow "helper": name is defined twice'],
    // cycles
    ['an agent that calls itself', { agents: [agent('loop', { tools: ['agent:loop'] })] }, 'agents "loop" → "loop" call each other in a cycle'],
    ['two agents that call each other', { agents: [agent('a', { tools: ['agent:b'] }), agent('b', { tools: ['calculator', 'agent:a'] })] }, 'agents "a" → "b" → "a" call each other in a cycle'],
    ['a cycle reached from outside it', { agents: [agent('top', { tools: ['agent:b'] }), agent('b', { tools: ['agent:c'] }), agent('c', { tools: ['agent:d'] }), agent('d', { tools: ['agent:b'] })] }, 'agents "b" → "c" → "d" → "b" call each other in a cycle'],
    // workflows
    ['a workflow step naming an unknown agent', { agents: [helper], workflows: [workflow('flow', ['helper', 'ghost'])] }, 'workflow "flow": steps[1] "ghost" names no agent this deployment has (assistant, helper)'],
    ['a parallel step naming an unknown agent', { workflows: [workflow('flow', [{ parallel: ['assistant', 'ghost'] }])] }, 'workflow "flow": steps[0] "ghost" names no agent this deployment has (assistant)'],
    ['a workflow step naming the Architect', { workflows: [workflow('flow', ['architect'])] }, 'workflow "flow": steps[0] "architect" names no agent this deployment has (assistant)'],
    ['a workflow step naming the Coder', { workflows: [workflow('flow', ['assistant', 'coder'])] }, 'workflow "flow": steps[1] "coder" names no agent this deployment has (assistant)'],
    ['an agent in two steps of a workflow', { agents: [helper], workflows: [workflow('flow', ['helper', 'assistant', 'helper'])] }, 'workflow "flow": steps[2] "helper" works in an earlier step already; an agent works once per workflow'],
    ['an agent in a step and a later parallel one', { agents: [helper, joiner], workflows: [workflow('flow', ['helper', { parallel: ['assistant', 'helper'] }, 'joiner'])] }, 'workflow "flow": steps[1] "helper" works in an earlier step already; an agent works once per workflow'],
    ['an agent twice in one parallel step', { agents: [joiner], workflows: [workflow('flow', [{ parallel: ['assistant', 'assistant'] }, 'joiner'])] }, 'workflow "flow": steps[0] "assistant" works in an earlier step already; an agent works once per workflow'],
    // The last step's one answer is the run's: parallel answers need an agent that joins them.
    ['a workflow whose last step is parallel', { agents: [helper, joiner], workflows: [workflow('flow', ['helper', { parallel: ['assistant', 'joiner'] }])] }, 'workflow "flow": steps[1] the last step is one agent, whose answer is the run\'s (add an agent that joins the parallel results)'],
    ['a workflow of one parallel step', { agents: [helper], workflows: [workflow('flow', [{ parallel: ['assistant', 'helper'] }])] }, 'workflow "flow": steps[0] the last step is one agent, whose answer is the run\'s (add an agent that joins the parallel results)'],
    // the shape of a definition
    ['agents that are not an array', { agents: { helper } }, 'agents: must be a JSON array of definitions'],
    ['workflows that are not an array', { workflows: 'flow' }, 'workflows: must be a JSON array of definitions'],
    ['a definition that is not an object', { agents: [helper, 'lead'] }, 'agents[1]: (the definition): Invalid input: expected object, received string'],
    ['a definition that is null', { agents: [null] }, 'agents[0]: (the definition): Invalid input: expected object, received null'],
    ['a name that is not a string', { agents: [{ ...helper, name: 7 }] }, 'agents[0]: name: Invalid input: expected string, received number'],
    ['a name outside [a-z0-9-]', { agents: [agent('Helper')] }, 'agents[0] ("Helper"): name: must be 1-64 of a-z, 0-9 and "-"'],
    ['a name longer than 64', { agents: [agent('a'.repeat(65))] }, `agents[0] ("${'a'.repeat(65)}"): name: must be 1-64 of a-z, 0-9 and "-"`],
    ['an empty description', { agents: [helper, agent('lead', { description: '  ' })] }, 'agents[1] ("lead"): description: must not be empty'],
    ['empty instructions', { agents: [agent('helper', { instructions: '\n' })] }, 'agents[0] ("helper"): instructions: must not be empty'],
    ['a field definitions do not have', { agents: [{ ...helper, temperature: 0 }] }, 'agents[0] ("helper"): (the definition): Unrecognized key: "temperature"'],
    ['an empty tool entry', { agents: [agent('helper', { tools: ['calculator', ''] })] }, 'agents[0] ("helper"): tools.1: Too small: expected string to have >=1 characters'],
    ['maxTokens past 128,000', { agents: [agent('helper', { maxTokens: 128_001 })] }, 'agents[0] ("helper"): maxTokens: Too big: expected number to be <=128000'],
    ['maxIterations of 0', { agents: [agent('helper', { maxIterations: 0 })] }, 'agents[0] ("helper"): maxIterations: Too small: expected number to be >=1'],
    ['a budget of no money', { agents: [agent('helper', { budget: { maxUsd: 0 } })] }, 'agents[0] ("helper"): budget.maxUsd: Too small: expected number to be >0'],
    ['a workflow of no steps', { workflows: [workflow('flow', [])] }, 'workflows[0] ("flow"): steps: Too small: expected array to have >=1 items'],
    ['a parallel step of one agent', { workflows: [workflow('flow', ['assistant', { parallel: ['assistant'] }])] }, 'workflows[0] ("flow"): steps.1.parallel: Too small: expected array to have >=2 items'],
  ];

  it.each(cases)('%s', (_rule, config, message) => {
    expect(refusalOf(config)).toBe(message);
  });

  it.each(reservedNames)('an agent named "%s", a name the built-ins hold', (name) => {
    expect(refusalOf({ agents: [agent(name)] })).toBe(`agent "${name}": name is taken by a built-in (assistant, architect, coder, plan-and-build, single, multi)`);
  });

  it('an output schema no validator can compile, naming the problem', () => {
    expect(refusalOf({ agents: [agent('helper', { output: { schema: { type: 'object', properties: { a: { type: 'nope' } } } } })] })).toMatch(
      /^agent "helper": output\.schema: is not a JSON Schema this service can use: .*properties\/a\/type/,
    );
  });

  it('any MCP tool and any Lambda tool when the deployment has none', () => {
    expect(refusalOf({ agents: [agent('helper', { tools: ['docs__search'] })] }, {})).toBe(
      'agent "helper": tools[0] "docs__search" is not a tool of this deployment (it has calculator, read_file, write_file, list_files, edit_file, and agent:<name>)',
    );
    expect(refusalOf({ agents: [agent('helper', { tools: ['word_count'] })] }, {})).toMatch(/^agent "helper": tools\[0\] "word_count" is not a tool/);
  });
});

describe('AgentCatalog.from accepts', () => {
  const researcher = agent('researcher', {
    tools: ['docs__search', 'web__*', 'word_count', 'read_file'],
    model: 'claude-small',
    maxTokens: 2048,
    maxIterations: 12,
    output: { schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } },
    approvals: {
      tools: ['word_count', 'web__get'],
      rules: [
        { tool: 'docs__search', input: { q: 'secret*' }, action: 'deny' },
        { tool: 'web__*', input: { url: 'https://internal/**' }, action: 'deny' },
      ],
    },
    budget: { maxUsd: 0.5, maxTokens: 40_000 },
  });
  const lead = agent('lead', { tools: ['agent:researcher', 'agent:assistant', 'calculator'] });
  const review = workflow('review', [{ parallel: ['researcher', 'lead'] }, 'assistant']);

  it('every kind of tool entry, every optional field, agents calling agents and workflows of them', () => {
    const catalog = AgentCatalog.from({ agents: [researcher, lead], workflows: [review] }, rules);
    expect([catalog.agent('researcher'), catalog.agent('lead'), catalog.agent('ghost')]).toEqual([researcher, lead, undefined]);
    expect([catalog.workflow('review'), catalog.workflow('plan-and-build'), catalog.workflow('ghost')]).toEqual([review, builtinWorkflows[0], undefined]);
    expect(catalog.agentNames()).toEqual(['assistant', 'architect', 'coder', 'researcher', 'lead']);
    expect(catalog.workflowNames()).toEqual(['plan-and-build', 'review']);
    expect([catalog.ref('lead'), catalog.ref('assistant'), catalog.ref('ghost')]).toEqual([
      { name: 'lead', version: versionOf(lead) },
      refOf(builtinAgents[0]!),
      undefined,
    ]);
  });

  it('nothing at all: the built-ins alone', () => {
    const catalog = AgentCatalog.from();
    expect([catalog.agentNames(), catalog.workflowNames()]).toEqual([['assistant', 'architect', 'coder'], ['plan-and-build']]);
    expect(AgentCatalog.from({ agents: [], workflows: [] }).agentNames()).toEqual(['assistant', 'architect', 'coder']);
  });

  it('a definition without tools as one with none, its texts trimmed', () => {
    const catalog = AgentCatalog.from({ agents: [{ name: 'bare', description: ' Says things. ', instructions: '\nSay things.\n' }] });
    expect(catalog.agent('bare')).toStrictEqual({ name: 'bare', description: 'Says things.', instructions: 'Say things.', tools: [] });
  });

  it('finish_plan in an approval policy, as the built-in tools it names', () => {
    expect(AgentCatalog.from({ agents: [agent('helper', { approvals: { tools: ['finish_plan', 'calculator'] } })] }).agent('helper')?.approvals).toEqual({ tools: ['finish_plan', 'calculator'] });
  });

  it('tools whose names end like an agent\'s name, as tools and not calls of that agent', () => {
    // "write_file" less its first six characters is "file": only `agent:` entries are calls.
    const file = agent('file', { tools: ['read_file', 'write_file'] });
    expect(AgentCatalog.from({ agents: [file, agent('ile', { tools: ['agent:file'] })] }).agent('file')).toEqual(file);
  });

  it('a deep lattice of agents calling agents, checking each agent once', { timeout: 5_000 }, () => {
    // 25 layers of two agents, each calling both of the next layer: 2^25 paths, 50 agents.
    const layers = Array.from({ length: 25 }, (_, i) => [`a${i}`, `b${i}`]);
    const agents = layers.flatMap((names, i) => names.map((name) => agent(name, { tools: (layers[i + 1] ?? []).map((callee) => `agent:${callee}`) })));
    expect(AgentCatalog.from({ agents }).agentNames()).toHaveLength(53);
  });

  it('any model when the deployment names none', () => {
    expect(AgentCatalog.from({ agents: [agent('helper', { model: 'anything-at-all' })] }).agent('helper')?.model).toBe('anything-at-all');
  });

  it('lists the built-ins first, then the team\'s agents, then the workflows, each with its version', () => {
    const catalog = AgentCatalog.from({ agents: [researcher, lead], workflows: [review] }, rules);
    const [assistant, architect, coder] = builtinAgents.map((a) => ({ name: a.name, kind: 'agent', description: a.description, version: versionOf(a), tools: a.tools, builtin: true }));
    expect(catalog.summaries()).toStrictEqual([
      assistant,
      architect,
      coder,
      { name: 'researcher', kind: 'agent', description: 'The researcher.', version: versionOf(researcher), tools: researcher.tools, model: 'claude-small', builtin: false },
      { name: 'lead', kind: 'agent', description: 'The lead.', version: versionOf(lead), tools: lead.tools, builtin: false },
      { name: 'plan-and-build', kind: 'workflow', description: builtinWorkflows[0]!.description, version: versionOf(builtinWorkflows[0]!), tools: [], builtin: true, steps: ['architect', 'coder'] },
      { name: 'review', kind: 'workflow', description: 'The review workflow.', version: versionOf(review), tools: [], builtin: false, steps: review.steps },
    ]);
  });
});

/** The same value with the keys of every object in reverse order. */
function reversedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).reverse().map(([key, v]) => [key, reversedKeys(v)]));
}

describe('versionOf', () => {
  const full = agent('helper', {
    tools: ['calculator', 'docs__search'],
    model: 'claude-small',
    maxTokens: 1000,
    maxIterations: 5,
    output: { schema: { type: 'object' } },
    approvals: { tools: ['calculator'] },
    budget: { maxUsd: 1, maxTokens: 100 },
  });

  it('is the first 12 hex digits of the SHA-256 of the JSON with keys sorted at every depth', () => {
    const json = '{"budget":{"maxTokens":5,"maxUsd":1},"description":"D.","instructions":"I.","name":"a","tools":["calculator"]}';
    const definition = { tools: ['calculator'], name: 'a', instructions: 'I.', description: 'D.', budget: { maxUsd: 1, maxTokens: 5 } };
    expect(versionOf(definition)).toBe(createHash('sha256').update(json).digest('hex').slice(0, 12));
    expect(versionOf(definition)).toMatch(/^[0-9a-f]{12}$/);
  });

  it('is the same whatever order the keys are written in, at any depth', () => {
    expect(versionOf(reversedKeys(full) as AgentDefinition)).toBe(versionOf(full));
    const flow = workflow('flow', ['helper', { parallel: ['a', 'b'] }]);
    expect(versionOf(reversedKeys(flow) as WorkflowDefinition)).toBe(versionOf(flow));
  });

  it('changes with any field, a nested one or the order of the tools', () => {
    const changed: AgentDefinition[] = [
      { ...full, name: 'helper2' },
      { ...full, description: 'Another.' },
      { ...full, instructions: 'Other instructions.' },
      { ...full, tools: ['docs__search', 'calculator'] },
      { ...full, tools: ['calculator'] },
      { ...full, model: 'claude-big' },
      { ...full, maxTokens: 1001 },
      { ...full, maxIterations: 6 },
      { ...full, output: { schema: { type: 'object', required: [] } } },
      { ...full, approvals: { tools: ['docs__search'] } },
      { ...full, budget: { maxUsd: 1, maxTokens: 101 } },
      { ...full, budget: { maxUsd: 1 } },
      agent('helper', { tools: full.tools }),
    ];
    const versions = new Set([full, ...changed].map(versionOf));
    expect(versions.size).toBe(changed.length + 1);
  });

  it('versions a schema holding null like any other value', () => {
    const nullable = agent('helper', { output: { schema: { type: 'object', properties: { note: { type: ['string', 'null'], default: null } } } } });
    expect(versionOf(nullable)).toMatch(/^[0-9a-f]{12}$/);
    expect(versionOf(nullable)).toBe(versionOf(reversedKeys(nullable) as AgentDefinition));
  });

  it('tells workflows apart by their steps', () => {
    expect(versionOf(workflow('flow', ['a', 'b']))).not.toBe(versionOf(workflow('flow', ['b', 'a'])));
    expect(versionOf(workflow('flow', ['a', 'b']))).not.toBe(versionOf(workflow('flow', [{ parallel: ['a', 'b'] }])));
  });
});

// ── Properties ─────────────────────────────────────────────────────────────

const plainTools = ['calculator', 'read_file', 'write_file', 'list_files', 'edit_file', 'word_count', 'shout', 'docs__search', 'docs__fetch-page', 'web__*', 'agent:assistant'];
const approvable = [...toolNames, 'word_count', 'shout', 'docs__search', 'web__get'];
const schemas = [{ type: 'object' }, { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] }, { type: 'object', additionalProperties: false }];

const nameArb = fc.stringMatching(/^[a-z0-9-]{1,64}$/).filter((name) => !reservedNames.includes(name));
const textArb = (maxLength: number) =>
  fc
    .string({ unit: 'grapheme', minLength: 1, maxLength })
    .map((text) => text.trim())
    .filter((text) => text.length > 0);

const ruleArb = fc.record(
  {
    tool: fc.constantFrom(...approvable),
    input: fc.dictionary(fc.constantFrom('path', 'q', 'content'), fc.string({ minLength: 1, maxLength: 20 }), { maxKeys: 2, noNullPrototype: true }),
    action: fc.constantFrom('approve' as const, 'deny' as const, 'ask' as const),
  },
  { requiredKeys: ['tool', 'action'] },
);

/** The optional fields of a definition, any of them present. */
const optionalArb = fc.record(
  {
    model: fc.constantFrom('claude-small', 'claude-big'),
    maxTokens: fc.integer({ min: 1, max: 128_000 }),
    maxIterations: fc.integer({ min: 1, max: 200 }),
    output: fc.constantFrom(...schemas).map((schema) => ({ schema })),
    approvals: fc.record({ tools: fc.shuffledSubarray(approvable, { maxLength: 4 }), rules: fc.array(ruleArb, { maxLength: 3 }) }, { requiredKeys: ['tools'] }),
    budget: fc.record({ maxUsd: fc.double({ min: 0.01, max: 1000, noNaN: true }), maxTokens: fc.integer({ min: 1, max: 1_000_000_000 }) }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);

/** A definition named `name` whose tools are some plain tools, `agent:` entries of `callees` and `must`, in any order. */
function definitionArb(name: string, callees: readonly string[], must: readonly string[] = []) {
  return fc
    .record({
      description: textArb(80),
      instructions: textArb(400),
      plain: fc.subarray(plainTools),
      calls: fc.subarray(callees.map((callee) => `agent:${callee}`)),
      optional: optionalArb,
    })
    .chain(({ description, instructions, plain, calls, optional }) => {
      const entries = [...new Set([...plain, ...calls, ...must])];
      return fc
        .shuffledSubarray(entries, { minLength: entries.length, maxLength: entries.length })
        .map((tools): AgentDefinition => ({ name, description, instructions, tools, ...optional }));
    });
}

/** Valid agents whose `agent:` edges form a DAG (each calls only later ones), and workflows of them. */
const validConfigArb = fc
  .record({ agentCount: fc.integer({ min: 1, max: 6 }), workflowCount: fc.integer({ min: 0, max: 2 }) })
  .chain(({ agentCount, workflowCount }) =>
    fc.uniqueArray(nameArb, { minLength: agentCount + workflowCount, maxLength: agentCount + workflowCount }).chain((names) => {
      const agentNames = names.slice(0, agentCount);
      const agents = fc.tuple(...agentNames.map((name, i) => definitionArb(name, agentNames.slice(i + 1))));
      const workflows = fc.tuple(
        ...names.slice(agentCount).map((name) =>
          fc
            .record({ description: textArb(80), members: fc.shuffledSubarray([...agentNames, 'assistant'], { minLength: 1 }), together: fc.boolean(), at: fc.nat() })
            .map(({ description, members, together, at }): WorkflowDefinition => {
              // Two neighbours work at once, in any step but the last (whose one answer is the run's).
              const i = at % Math.max(members.length - 2, 1);
              const [first, second] = [members[i], members[i + 1]];
              const steps: WorkflowDefinition['steps'] =
                together && members.length >= 3 && first && second ? [...members.slice(0, i), { parallel: [first, second] }, ...members.slice(i + 2)] : members;
              return { name, description, steps };
            }),
        ),
      );
      return fc.record({ agents, workflows });
    }),
  );

describe('AgentCatalog.from, for any set of definitions', () => {
  it('accepts a valid set and gives back the same definitions after a trip through JSON', () => {
    fc.assert(
      fc.property(validConfigArb, ({ agents, workflows }) => {
        const catalog = AgentCatalog.from(JSON.parse(JSON.stringify({ agents, workflows })) as AgentConfig, rules);
        expect(agents.map((a) => catalog.agent(a.name))).toEqual(agents);
        expect(workflows.map((w) => catalog.workflow(w.name))).toEqual(workflows);
        expect(catalog.agentNames()).toEqual(['assistant', 'architect', 'coder', ...agents.map((a) => a.name)]);
        // The versions a run records are the versions of what the team wrote.
        expect(agents.map((a) => catalog.ref(a.name)?.version)).toEqual(agents.map(versionOf));
      }),
    );
  });

  it('refuses agents that call each other in a cycle of any length, among valid ones, naming the cycle in order', () => {
    const arb = fc
      .record({ cycleLength: fc.integer({ min: 1, max: 5 }), others: fc.integer({ min: 0, max: 5 }) })
      .chain(({ cycleLength, others }) =>
        fc.uniqueArray(nameArb, { minLength: cycleLength + others, maxLength: cycleLength + others }).chain((names) => {
          const cycle = names.slice(0, cycleLength);
          const rest = names.slice(cycleLength);
          // The cycle's agents call the next one round it; the others call the cycle or later others, never back.
          const members = cycle.map((name, i) => definitionArb(name, [], [`agent:${cycle[(i + 1) % cycleLength]}`]));
          const outside = rest.map((name, i) => definitionArb(name, [...cycle, ...rest.slice(i + 1)]));
          const order = fc.shuffledSubarray([...names.keys()], { minLength: names.length, maxLength: names.length });
          return fc.record({ cycle: fc.constant(cycle), definitions: fc.tuple(...members, ...outside), order });
        }),
      );
    fc.assert(
      fc.property(arb, ({ cycle, definitions, order }) => {
        const agents = order.map((i) => definitions[i]);
        const message = refusalOf({ agents }, rules);
        const named = /^agents ((?:"[a-z0-9-]+" → )+"[a-z0-9-]+") call each other in a cycle$/.exec(message)?.[1]?.split(' → ').map((n) => n.slice(1, -1));
        expect(named?.at(-1)).toBe(named?.[0]);
        const start = cycle.indexOf(named?.[0] ?? '');
        expect(named?.slice(0, -1)).toEqual(cycle.map((_, i) => cycle[(start + i) % cycle.length]));
      }),
    );
  });

  it('refuses a workflow of valid agents whose last step is parallel, however many steps come before', () => {
    const arb = validConfigArb.chain(({ agents, workflows }) =>
      fc
        .record({ members: fc.shuffledSubarray([...agents.map((a) => a.name), 'assistant'], { minLength: 2 }), together: fc.nat() })
        .map(({ members, together }) => {
          // The last 2 or more work at once; the ones before one at a time.
          const split = members.length - 2 - (together % (members.length - 1));
          const steps: WorkflowDefinition['steps'] = [...members.slice(0, split), { parallel: members.slice(split) }];
          return { agents, workflows, steps };
        }),
    );
    fc.assert(
      fc.property(arb, ({ agents, workflows, steps }) => {
        fc.pre(![...agents, ...workflows].some((d) => d.name === 'ends-parallel'));
        expect(refusalOf({ agents, workflows: [...workflows, workflow('ends-parallel', steps)] }, rules)).toBe(
          `workflow "ends-parallel": steps[${steps.length - 1}] the last step is one agent, whose answer is the run's (add an agent that joins the parallel results)`,
        );
      }),
    );
  });

  it('versions alike exactly the definitions that are alike', () => {
    const one = validConfigArb.map(({ agents }) => agents[0]!);
    fc.assert(
      fc.property(one, one, (a, b) => {
        expect(versionOf(reversedKeys(a) as AgentDefinition)).toBe(versionOf(a));
        fc.pre(!isDeepStrictEqual(a, b));
        expect(versionOf(a)).not.toBe(versionOf(b));
      }),
    );
  });
});

// ── Profiles ───────────────────────────────────────────────────────────────

const externalTool = (name: string, source: string, agents: string[] = ['single', 'coder']) => ({ name, source, agents });

describe('profileOf a team\'s agent', () => {
  it('takes its instructions alone as the system prompt when it has no file tool', () => {
    const profile = profileOf(agent('counter', { instructions: 'Count things.', tools: ['calculator', 'docs__search', 'word_count', 'agent:assistant'] }));
    expect(profile.system).toBe('Count things.');
  });

  it.each(['read_file', 'write_file', 'list_files', 'edit_file'])('appends the workspace rules when it has %s', (tool) => {
    expect(profileOf(agent('filer', { instructions: 'File things.', tools: ['calculator', tool] })).system).toBe(`File things.\n\n${workspaceRules}`);
  });

  it('has exactly its built-in tools, in the order it lists them', () => {
    const profile = profileOf(agent('mixed', { tools: ['edit_file', 'docs__search', 'calculator', 'agent:assistant', 'word_count', 'read_file'] }));
    expect(profile.tools.names).toEqual(['edit_file', 'calculator', 'read_file']);
    expect(profile.tools.specs().map((spec) => spec.name)).toEqual(['edit_file', 'calculator', 'read_file']);
    expect(profileOf(agent('empty')).tools.names).toEqual([]);
  });

  it('sees the external tools it lists by name, the tools of servers it lists whole, and no other, whatever their configuration names', () => {
    const profile = profileOf(agent('reader', { tools: ['docs__search', 'web__*', 'files__*', 'word_count', 'docs-v2'] }));
    const tools = [
      externalTool('files__list', 'mcp:files'),
      externalTool('fil__list', 'mcp:fil'),
      externalTool('docs-v2', 'lambda'),
      externalTool('docs__search', 'mcp:docs', ['architect']),
      externalTool('docs__fetch', 'mcp:docs'),
      externalTool('web__get', 'mcp:web', []),
      externalTool('web__post', 'mcp:web'),
      externalTool('webs__get', 'mcp:webs'),
      externalTool('we__get', 'mcp:we'),
      externalTool('word_count', 'lambda', ['architect']),
      externalTool('shout', 'lambda', ['single', 'reader']),
    ];
    // A Lambda tool named like a server (docs-v2) is that tool alone, not the server's tools.
    expect(tools.filter((tool) => profile.hasExternal(tool)).map((tool) => tool.name)).toEqual(['files__list', 'docs-v2', 'docs__search', 'web__get', 'web__post', 'word_count']);
  });

  it('uses the sources of the external tools it lists: mcp:<server> for <server>__…, lambda for the others', () => {
    const sources = ['mcp:docs', 'mcp:web', 'mcp:webs', 'lambda'].map((source) => ({ source, agents: ['single', 'coder', 'architect'] }));
    const uses = (tools: string[]) => sources.filter((source) => profileOf(agent('user', { tools })).usesSource(source)).map((s) => s.source);
    expect(uses(['docs__search', 'calculator'])).toEqual(['mcp:docs']);
    expect(uses(['web__*'])).toEqual(['mcp:web']);
    expect(uses(['word_count', 'agent:assistant'])).toEqual(['lambda']);
    expect(uses(['calculator', 'read_file', 'agent:assistant'])).toEqual([]);
  });

  it('answers the run itself, with its own model and answer size when it names them', () => {
    const definition = agent('fast', { model: 'claude-small', maxTokens: 512 });
    expect(profileOf(definition)).toMatchObject({ name: 'fast', definition: refOf(definition), answersRun: true, model: 'claude-small', maxTokens: 512 });
    expect(profileOf(definition).finishTool).toBeUndefined();
    const plain = profileOf(agent('plain'));
    expect([plain.model, plain.maxTokens, 'model' in plain, 'maxTokens' in plain]).toEqual([undefined, undefined, false, false]);
  });
});

describe('the built-in agents\' profiles', () => {
  it('take their places in a run: the assistant works as "single"', () => {
    expect(builtinAgents.map((definition) => profileOf(definition).name)).toEqual(['single', 'architect', 'coder']);
    expect(agentProfile('single').system).toBe(`${builtinAgents[0]!.instructions}\n\n${workspaceRules}`);
  });

  it('see the external tools and sources whose configuration names their place', () => {
    const forSingle = externalTool('docs__search', 'mcp:docs', ['single']);
    const forArchitect = externalTool('word_count', 'lambda', ['architect']);
    const seen = builtinAgents.map((definition) => [forSingle, forArchitect].filter((tool) => profileOf(definition).hasExternal(tool)).map((t) => t.name));
    expect(seen).toEqual([['docs__search'], ['word_count'], []]);
    const used = builtinAgents.map((definition) => profileOf(definition).usesSource({ source: 'mcp:docs', agents: ['coder'] }));
    expect(used).toEqual([false, false, true]);
    // The profiles steps use are these.
    expect(agentProfile('architect').hasExternal(forArchitect)).toBe(true);
  });

  it('let only the Architect finish with finish_plan, and not answer the run', () => {
    expect(builtinAgents.map((definition) => [profileOf(definition).finishTool, profileOf(definition).answersRun])).toEqual([
      [undefined, true],
      ['finish_plan', false],
      [undefined, true],
    ]);
  });

  it('are found by place only', () => {
    expect(() => agentProfile('assistant')).toThrow(new AgentDefinitionMissing('No built-in agent works as "assistant"; the run\'s definition names it.'));
  });
});

/** A run's agents with the agent at `place` following `ref`, and `callees` its agents may call. */
function runAgents(place: string, ref: AgentRef, callees: AgentRef[] = []): NonNullable<Run['agents']> {
  return [{ place, ...ref }, ...callees.map((callee) => ({ place: callee.name, ...callee, callee: true as const }))];
}

describe('profileFor', () => {
  /** A store that fails the test if it is read. */
  const unread = { get: () => Promise.reject(new Error('the store was read')), put: () => Promise.resolve() };

  it('follows the built-in of the place for a run that recorded no definition', async () => {
    expect(await profileFor('architect', undefined, unread)).toBe(agentProfile('architect'));
    // Agents recorded for other places only are none for this one.
    expect(await profileFor('coder', runAgents('single', refOf(builtinAgents[0]!)), unread)).toBe(agentProfile('coder'));
  });

  it('takes the built-in without reading the store when the run recorded its version', async () => {
    expect(await profileFor('single', runAgents('single', refOf(builtinAgents[0]!)), unread)).toBe(agentProfile('single'));
    expect(await profileFor('coder', runAgents('coder', refOf(builtinAgents[2]!)), unread)).toBe(agentProfile('coder'));
  });

  it('reads a stored version once, and keeps it for later steps', async () => {
    const store = new MemoryAgentDefinitionStore();
    const definition = agent('once', { instructions: 'Read me once.', tools: ['calculator'], model: 'claude-small' });
    await store.put(refOf(definition), definition);
    const first = await profileFor('once', runAgents('once', refOf(definition)), store);
    const second = await profileFor('once', runAgents('once', refOf(definition)), store);
    expect(second).toBe(first);
    expect(store.gets).toEqual([refOf(definition)]);
    expect({ system: first.system, tools: first.tools.names, model: first.model, definition: first.definition, agentTools: [...first.agentTools] }).toEqual({
      system: 'Read me once.',
      tools: ['calculator'],
      model: 'claude-small',
      definition: refOf(definition),
      agentTools: [],
    });
  });

  it('reads an older version of a built-in from the store, at the built-in\'s place', async () => {
    const store = new MemoryAgentDefinitionStore();
    const older = { ...builtinAgents[0]!, instructions: 'An older assistant.', tools: ['calculator'] };
    await store.put(refOf(older), older);
    const profile = await profileFor('single', runAgents('single', refOf(older)), store);
    expect({ name: profile.name, system: profile.system, tools: profile.tools.names }).toEqual({ name: 'single', system: 'An older assistant.', tools: ['calculator'] });
    expect(store.gets).toEqual([refOf(older)]);
  });

  it('finds the agent at its place, never an agent of that name the run may call', async () => {
    const store = new MemoryAgentDefinitionStore();
    const own = agent('placed', { instructions: 'The step\'s version.' });
    const called = agent('placed', { instructions: 'The version called as a tool.' });
    for (const d of [own, called]) await store.put(refOf(d), d);
    // In a workflow one agent may work in a step and be called by another: two entries, one place.
    const agents = [{ place: 'placed', ...refOf(called), callee: true as const }, { place: 'placed', ...refOf(own), step: 0 }];
    expect((await profileFor('placed', agents, store)).system).toBe('The step\'s version.');
    // A callee's entry alone is no agent at the place.
    await expect(profileFor('placed', agents.slice(0, 1), unread)).rejects.toThrow(new AgentDefinitionMissing('No built-in agent works as "placed"; the run\'s definition names it.'));
  });

  it('keeps at most 100 versions, letting the one read longest ago go first', async () => {
    vi.resetModules();
    const fresh = await import('../../functions/core/agents/profiles.js');
    const store = new MemoryAgentDefinitionStore();
    const refs: AgentRef[] = [];
    for (let i = 0; i <= 100; i++) {
      const definition = agent(`kept-${i}`);
      await store.put(refOf(definition), definition);
      refs.push(refOf(definition));
    }
    const read = async (i: number) => fresh.profileFor(`kept-${i}`, runAgents(`kept-${i}`, refs[i]!), store);
    const readsOf = (i: number) => store.gets.filter((ref) => ref.name === `kept-${i}`).length;
    for (let i = 0; i < 100; i++) await read(i);
    await read(0);
    expect(readsOf(0)).toBe(1);
    // The 101st makes room by dropping the first.
    await read(100);
    await read(1);
    await read(0);
    expect([readsOf(0), readsOf(1), readsOf(100)]).toEqual([2, 1, 1]);
  });

  it('refuses a version that is stored nowhere', async () => {
    const store = new MemoryAgentDefinitionStore();
    const ref = { name: 'gone', version: '0123456789ab' };
    await expect(profileFor('gone', runAgents('gone', ref), store)).rejects.toThrow(new AgentDefinitionMissing('Version 0123456789ab of agent "gone" is not stored.'));
    await expect(profileFor('gone', runAgents('gone', ref), undefined)).rejects.toThrow(AgentDefinitionMissing);
    // Nothing missing is remembered: stored later, the version is found.
    const definition = agent('gone');
    await store.put(ref, definition);
    expect((await profileFor('gone', runAgents('gone', ref), store)).system).toBe('You are the gone.');
  });
});

describe('profileFor an agent that calls agents', () => {
  const helperV1 = agent('tool-helper', { description: 'Adds numbers (v1).' });
  const helperV2 = agent('tool-helper', { description: 'Adds numbers (v2).' });
  const checker = agent('tool-checker', { description: 'Checks sums.' });
  const bystander = agent('tool-bystander');
  const lead = agent('tool-lead', { tools: ['calculator', 'agent:tool-checker', 'agent:tool-helper', 'agent:tool-absent', 'agent:assistant'] });

  async function storeOf(...definitions: AgentDefinition[]) {
    const store = new MemoryAgentDefinitionStore();
    for (const d of definitions) await store.put(refOf(d), d);
    return store;
  }

  it('offers, after its own tools, one tool per agent it calls that the run recorded, described by the recorded version', async () => {
    const store = await storeOf(lead, helperV1, helperV2, checker, bystander);
    const assistant = refOf(builtinAgents[0]!);
    // The run may call a bystander (another agent's callee) and records no tool-absent: neither is offered.
    const profile = await profileFor('tool-lead', runAgents('tool-lead', refOf(lead), [refOf(helperV1), refOf(bystander), assistant, refOf(checker)]), store);

    expect(profile.tools.names).toEqual(['calculator', 'agent_tool_helper', 'agent_assistant', 'agent_tool_checker']);
    expect([...profile.agentTools]).toEqual(['agent_tool_helper', 'agent_assistant', 'agent_tool_checker']);
    const specs = new Map(profile.tools.specs().map((spec) => [spec.name, spec]));
    expect(specs.get('agent_tool_helper')).toEqual({
      name: 'agent_tool_helper',
      description: 'Adds numbers (v1).\n\nRuns the agent "tool-helper" on the goal you give it and answers with its result.',
      inputSchema: expect.objectContaining({ type: 'object', properties: { goal: expect.objectContaining({ type: 'string' }), context: expect.objectContaining({ type: 'string' }) }, required: ['goal'] }),
    });
    expect(specs.get('agent_assistant')?.description).toBe(`${builtinAgents[0]!.description}\n\nRuns the agent "assistant" on the goal you give it and answers with its result.`);
    // The built-in's description needs no read; the bystander's is never read.
    expect(store.gets.map((ref) => ref.name).sort()).toEqual(['tool-checker', 'tool-helper', 'tool-lead']);
  });

  it('makes one profile per set of callee versions: the same versions share it, another version of a callee makes another', async () => {
    const store = await storeOf(lead, helperV1, helperV2, checker);
    const withV1 = runAgents('tool-lead', refOf(lead), [refOf(helperV1), refOf(checker)]);
    const withV2 = runAgents('tool-lead', refOf(lead), [refOf(helperV2), refOf(checker)]);
    const first = await profileFor('tool-lead', withV1, store);
    const again = await profileFor('tool-lead', structuredClone(withV1), store);
    const other = await profileFor('tool-lead', withV2, store);

    expect(again).toBe(first);
    expect(other).not.toBe(first);
    expect([first, other].map((p) => p.tools.specs().find((spec) => spec.name === 'agent_tool_helper')?.description.split('\n')[0])).toEqual(['Adds numbers (v1).', 'Adds numbers (v2).']);
    // Without the callees the agent has its own tools only.
    expect((await profileFor('tool-lead', runAgents('tool-lead', refOf(lead)), store)).tools.names).toEqual(['calculator']);
  });

  it('refuses when a callee\'s recorded version is stored nowhere', async () => {
    const lost = agent('tool-lost');
    const caller = agent('tool-caller', { tools: ['agent:tool-lost'] });
    const store = await storeOf(caller);
    await expect(profileFor('tool-caller', runAgents('tool-caller', refOf(caller), [refOf(lost)]), store)).rejects.toThrow(
      new AgentDefinitionMissing(`Version ${refOf(lost).version} of agent "tool-lost" is not stored.`),
    );
  });
});

describe('definitionFor', () => {
  it('answers a built-in\'s version without the store, and another version of it from the store', async () => {
    const unread = { get: () => Promise.reject(new Error('the store was read')), put: () => Promise.resolve() };
    for (const builtin of builtinAgents) expect(await definitionFor(refOf(builtin), unread)).toBe(builtin);
    const store = new MemoryAgentDefinitionStore();
    const older = { ...builtinAgents[1]!, instructions: 'An older Architect.' };
    await store.put(refOf(older), older);
    expect(await definitionFor(refOf(older), store)).toEqual(older);
  });

  it('parses what the store holds, refusing a version stored nowhere', async () => {
    const store = new MemoryAgentDefinitionStore();
    const ref = { name: 'parsed', version: 'aaaaaaaaaaaa' };
    await expect(definitionFor(ref, store)).rejects.toThrow(new AgentDefinitionMissing('Version aaaaaaaaaaaa of agent "parsed" is not stored.'));
    await expect(definitionFor(ref, undefined)).rejects.toThrow(AgentDefinitionMissing);
    // Stored without tools, it reads as a definition with none (the schema's default).
    await store.put(ref, { name: 'parsed', description: 'D.', instructions: 'I.' });
    expect(await definitionFor(ref, store)).toStrictEqual({ name: 'parsed', description: 'D.', instructions: 'I.', tools: [] });
  });

  it('reads each version once, keeping at most 100 and dropping the one read first', async () => {
    vi.resetModules();
    const fresh = await import('../../functions/core/agents/read.js');
    const store = new MemoryAgentDefinitionStore();
    const refs: AgentRef[] = [];
    for (let i = 0; i <= 100; i++) {
      const definition = agent(`read-${i}`);
      await store.put(refOf(definition), definition);
      refs.push(refOf(definition));
    }
    const read = (i: number) => fresh.definitionFor(refs[i]!, store);
    const readsOf = (i: number) => store.gets.filter((ref) => ref.name === `read-${i}`).length;
    for (let i = 0; i < 100; i++) await read(i);
    expect(await read(0)).toEqual(agent('read-0'));
    expect(readsOf(0)).toBe(1);
    await read(100);
    await read(1);
    await read(0);
    expect([readsOf(0), readsOf(1), readsOf(100)]).toEqual([2, 1, 1]);
  });
});
