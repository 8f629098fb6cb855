import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toolNames } from '../../functions/core/tools/builtin/builtin.js';
import { conversationIdOf } from '../../functions/core/conversation/conversation.js';
import { type AgentName } from '../../functions/core/agents/types.js';
import { InfrastructureError } from '../../functions/core/errors/errors.js';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { type ExternalCallContext, type ExternalTool, type ToolCatalog, type ToolCatalogStore, type ToolSource, toolNamePattern } from '../../functions/core/tools/external/types.js';
import { ExternalTools, externalToolsConfig, lambdaCatalogEntries, listedLambdaTools, unavailableNote } from '../../functions/core/tools/external/external-tools.js';
import { agentProfile } from '../../functions/core/agents/profiles.js';
import { externalToolNames, isExternalToolName, mcpToolName, noExternalTools, unlistedPolicyTools } from '../../functions/core/tools/external/names.js';
import { marked, memoryCore, say, use } from '../support/agents.js';
import { untrustedDataRules } from '../../functions/core/untrusted/mark.js';
import { MemoryApprovalStore, RecordingTokens, newRun } from '../support/memory.js';
import { readEnv } from '../../functions/wiring/wire.js';
import { ApprovalPolicyInvalid, type ApprovalRule, InvalidEditedInput } from '../../functions/core/approvals/types.js';
import { checkEditedInput, decideApproval } from '../../functions/core/approvals/decide.js';
import { requestApproval } from '../../functions/core/approvals/request.js';

class MemoryCatalogStore implements ToolCatalogStore {
  readonly catalogs = new Map<string, ToolCatalog>();
  writes = 0;
  async getCatalog(runId: string) {
    return this.catalogs.get(runId);
  }
  async putCatalog(runId: string, catalog: ToolCatalog) {
    this.writes++;
    const stored = this.catalogs.get(runId);
    if (stored) return stored;
    this.catalogs.set(runId, structuredClone(catalog));
    return catalog;
  }
}

class FakeSource implements ToolSource {
  lists = 0;
  readonly calls: [string, unknown][] = [];
  readonly contexts: ExternalCallContext[] = [];
  constructor(
    readonly id: string,
    public tools: ExternalTool[],
    readonly agents: readonly AgentName[] = ['single', 'coder'],
    public answer: (tool: ExternalTool, input: unknown) => Promise<{ content: string; isError: boolean }> = async (tool) => ({
      content: `${tool.target} ok`,
      isError: false,
    }),
  ) {}
  async list() {
    this.lists++;
    if (this.tools.length === 0) throw new Error('connect ECONNREFUSED 127.0.0.1:9');
    return this.tools;
  }
  call(tool: ExternalTool, input: unknown, context: ExternalCallContext) {
    this.calls.push([tool.name, input]);
    this.contexts.push(context);
    return this.answer(tool, input);
  }
}

function tool(name: string, source = 'mcp:docs', agents: AgentName[] = ['single', 'coder']): ExternalTool {
  return {
    name,
    description: `The ${name} tool.`,
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    source,
    target: name.split('__').at(-1) ?? name,
    agents,
  };
}

const fixedClock = () => new Date('2026-01-01T00:00:00Z');

describe('external tool names', () => {
  it('joins server and tool with "__" and makes MCP-only characters valid', () => {
    expect(mcpToolName('docs', 'search')).toBe('docs__search');
    expect(mcpToolName('docs', 'pages/get.v2')).toBe('docs__pages_get_v2');
    expect(mcpToolName('docs', 'x'.repeat(60))).toBeUndefined();
  });

  it('never makes a name the Messages API would refuse', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-zA-Z0-9-]{1,32}$/), fc.string({ maxLength: 80 }), (server, name) => {
        const made = mcpToolName(server, name);
        expect(made === undefined || toolNamePattern.test(made)).toBe(true);
      }),
    );
  });
});

describe('the external tools an approval policy may name', () => {
  const names = { mcpServers: ['docs', 'my-search'], lambdaTools: ['word_count'] };

  it('are the configured Lambda tools and <server>__<tool> of the configured servers, nothing else', () => {
    const accepted = ['word_count', 'docs__search', 'docs__pages_get_v2', 'my-search__q', 'docs___hidden'];
    const refused = ['shout', 'nosuch__x', 'docs__', 'docs', '__search', 'docs__a.b', 'Docs__search', 'my__search', `docs__${'x'.repeat(60)}`];
    expect(accepted.filter((name) => isExternalToolName(names, name))).toEqual(accepted);
    expect(refused.filter((name) => isExternalToolName(names, name))).toEqual([]);
    expect(isExternalToolName(noExternalTools, 'docs__search')).toBe(false);
  });

  it('include every name a configured server\'s tool is called by, and no name of another server\'s', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-zA-Z0-9-]{1,32}$/), fc.string({ minLength: 1, maxLength: 40 }), (server, tool) => {
        const made = mcpToolName(server, tool);
        fc.pre(made !== undefined);
        expect(isExternalToolName({ mcpServers: [server], lambdaTools: [] }, made ?? '')).toBe(true);
        expect(isExternalToolName({ mcpServers: [`${server}x`], lambdaTools: [] }, made ?? '')).toBe(false);
      }),
    );
  });

  it('are named by the configuration', () => {
    const config = externalToolsConfig(toolNames).parse({
      mcpServers: [{ name: 'docs', url: 'https://mcp.example.com/mcp' }],
      lambdaTools: [{ name: 'word_count', description: 'Counts words.', inputSchema: { type: 'object' }, functionName: 'wc' }],
    });
    expect(externalToolNames(config)).toEqual({ mcpServers: ['docs'], lambdaTools: ['word_count'] });
  });
});

describe('STEPWISE_APPROVAL_TOOLS', () => {
  const env = { STEPWISE_TABLE: 't', STEPWISE_BUCKET: 'b', STEPWISE_MCP_SERVER_NAMES: 'docs', STEPWISE_LAMBDA_TOOL_NAMES: 'word_count' };

  it('may name built-in tools and the external tools the function is told of', () => {
    expect(readEnv({ ...env, STEPWISE_APPROVAL_TOOLS: 'write_file, docs__search,word_count' }).STEPWISE_APPROVAL_TOOLS).toEqual(['write_file', 'docs__search', 'word_count']);
  });

  it('refuses at startup a tool the deployment does not have, naming the variable, rather than run it ungated', () => {
    expect(() => readEnv({ ...env, STEPWISE_APPROVAL_TOOLS: 'docs__search,nosuch__x' })).toThrow(
      'Stepwise is misconfigured: STEPWISE_APPROVAL_TOOLS: unknown tool "nosuch__x"; known: calculator, read_file, write_file, list_files, edit_file, finish_plan, docs__<tool>, word_count',
    );
    expect(() => readEnv({ STEPWISE_TABLE: 't', STEPWISE_BUCKET: 'b', STEPWISE_APPROVAL_TOOLS: 'word_count' })).toThrow('STEPWISE_APPROVAL_TOOLS: unknown tool "word_count"');
  });
});

describe('external tools config', () => {
  const config = externalToolsConfig(toolNames);
  const lambda = { name: 'word_count', description: 'Counts words.', inputSchema: { type: 'object' }, functionName: 'wc' };

  it('accepts servers and Lambda tools with unique names', () => {
    expect(config.parse({ mcpServers: [{ name: 'docs', url: 'https://mcp.example.com/mcp' }], lambdaTools: [lambda] })).toEqual({
      mcpServers: [{ name: 'docs', url: 'https://mcp.example.com/mcp' }],
      lambdaTools: [lambda],
    });
  });

  it.each([
    ['a Lambda tool named like a built-in', { lambdaTools: [{ ...lambda, name: 'read_file' }] }, 'lambdaTools.0.name', 'built-in'],
    ['a Lambda tool with the MCP separator', { lambdaTools: [{ ...lambda, name: 'docs__x' }] }, 'lambdaTools.0.name', 'reserved'],
    ['a Lambda tool name the API refuses', { lambdaTools: [{ ...lambda, name: 'word count' }] }, 'lambdaTools.0.name', 'tool name'],
    ['two Lambda tools of one name', { lambdaTools: [lambda, lambda] }, 'lambdaTools.1.name', 'twice'],
    ['an input schema that is not an object', { lambdaTools: [{ ...lambda, inputSchema: { type: 'string' } }] }, 'lambdaTools.0.inputSchema.type', ''],
    ['two servers of one name', { mcpServers: [{ name: 'a', url: 'https://x/mcp' }, { name: 'a', url: 'https://y/mcp' }] }, 'mcpServers.1.name', 'twice'],
    ['a server name with "_"', { mcpServers: [{ name: 'my_docs', url: 'https://x/mcp' }] }, 'mcpServers.0.name', 'server name'],
    ['a server URL that is not http(s)', { mcpServers: [{ name: 'a', url: 'file:///etc/passwd' }] }, 'mcpServers.0.url', ''],
    ['a server reached over plain http across a network', { mcpServers: [{ name: 'a', url: 'http://mcp.example.com/mcp' }] }, 'mcpServers.0.url', 'https'],
    ['a server URL with credentials in it', { mcpServers: [{ name: 'a', url: 'https://me:secret@mcp.example.com/mcp' }] }, 'mcpServers.0.url', 'credentials'],
    ['a server URL with a user name in it', { mcpServers: [{ name: 'a', url: 'https://me@mcp.example.com/mcp' }] }, 'mcpServers.0.url', 'credentials'],
    ['plain http to a host named like localhost', { mcpServers: [{ name: 'a', url: 'http://localhost.example.com/mcp' }] }, 'mcpServers.0.url', 'https'],
    ['plain http that only mentions localhost', { mcpServers: [{ name: 'a', url: 'http://mcp.example.com/?to=http://localhost' }] }, 'mcpServers.0.url', 'https'],
  ])('refuses %s', (_name, input, path, message) => {
    const parsed = config.safeParse(input);
    expect(parsed.success).toBe(false);
    const issue = parsed.error?.issues.find((i) => i.path.join('.') === path);
    expect(issue?.message).toContain(message);
  });

  it.each(['http://127.0.0.1:8788/mcp', 'http://127.10.200.30/mcp', 'http://localhost', 'http://localhost/mcp', 'http://[::1]:9000/mcp', 'https://mcp.example.com/mcp'])('accepts the server URL %s', (url) => {
    expect(config.safeParse({ mcpServers: [{ name: 'docs', url }] }).success).toBe(true);
  });
});

describe('a run\'s catalog', () => {
  it('is listed once and stored; later steps read it even if the sources change', async () => {
    const docs = new FakeSource('mcp:docs', [tool('docs__search')]);
    const store = new MemoryCatalogStore();
    const external = new ExternalTools([docs], store, { clock: fixedClock });

    const first = await external.forRun('run-1');
    docs.tools = [tool('docs__search'), tool('docs__new')];
    // A fresh function (another Lambda instance) reads the stored catalog too.
    const second = await new ExternalTools([docs], store).forRun('run-1');

    expect(first).toEqual({ tools: [tool('docs__search')], unavailable: [], listedAt: '2026-01-01T00:00:00.000Z' });
    expect(second).toEqual(first);
    expect(docs.lists).toBe(1);
    expect(store.writes).toBe(1);
  });

  it('leaves out a source that is down, names it, and keeps the others', async () => {
    const external = new ExternalTools(
      [new FakeSource('mcp:down', [], ['coder']), new FakeSource('mcp:docs', [tool('docs__search')])],
      new MemoryCatalogStore(),
      { clock: fixedClock },
    );
    expect(await external.forRun('run-1')).toEqual({
      tools: [tool('docs__search')],
      unavailable: [{ source: 'mcp:down', reason: 'connect ECONNREFUSED 127.0.0.1:9', agents: ['coder'] }],
      listedAt: '2026-01-01T00:00:00.000Z',
    });
  });

  it('keeps the catalog a concurrent step stored first', async () => {
    const store = new MemoryCatalogStore();
    const winner: ToolCatalog = { tools: [tool('docs__old')], unavailable: [], listedAt: '2025-12-31T00:00:00.000Z' };
    const racing: ToolCatalogStore = {
      getCatalog: async () => undefined,
      putCatalog: async (runId, catalog) => {
        store.catalogs.set(runId, winner);
        return store.putCatalog(runId, catalog);
      },
    };
    const external = new ExternalTools([new FakeSource('mcp:docs', [tool('docs__search')])], racing);
    expect(await external.forRun('run-1')).toEqual(winner);
  });
});

/** An agent core whose run offers the tools of `sources`, their catalogs kept in `store`. */
async function core(sources: ToolSource[], goal = 'Search.') {
  const c = await memoryCore(goal);
  const store = new MemoryCatalogStore();
  const externalTools = new ExternalTools(sources, store, { clock: fixedClock });
  return { ...c, store, deps: { ...c.deps, externalTools } };
}

describe('external tools in the steps', () => {

  it('sends the built-in tools, then the run\'s external tools, to the agents that may use them', async () => {
    const c = await core([new FakeSource('mcp:docs', [tool('docs__search'), tool('docs__plan', 'mcp:docs', ['architect'])]), new FakeSource('mcp:down', [])]);
    await c.runs.create(newRun('run-2', 'Plan.'));
    c.model.addTurn(say('ok'), say('planned'));

    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, c.deps);
    await inferenceStep({ runId: 'run-2', agent: 'architect', iteration: 0 }, c.deps);

    const [single, architect] = c.model.requests;
    expect(single?.tools.map((t) => t.name)).toEqual(['calculator', 'read_file', 'write_file', 'list_files', 'edit_file', 'docs__search']);
    expect(single?.tools.at(-1)).toEqual({ name: 'docs__search', description: 'The docs__search tool.', inputSchema: tool('docs__search').inputSchema });
    expect(single?.system).toContain('could not be listed when this run began and are not offered: mcp:down.\n\n');
    expect(single?.system.endsWith(untrustedDataRules)).toBe(true);
    expect(architect?.tools.map((t) => t.name)).toEqual(['finish_plan', 'read_file', 'list_files', 'docs__plan']);
    expect(architect?.system).not.toContain('not offered');
  });

  it('stops a run whose policy names an MCP tool its server does not list, before the model is asked', async () => {
    const c = await core([new FakeSource('mcp:docs', [tool('docs__search'), tool('docs__fetch')]), new FakeSource('mcp:down', [])]);
    const approvals = new MemoryApprovalStore();
    approvals.policies.set('run-1', ['write_file', 'docs__serach', 'down__anything']);
    c.model.addTurn(say('ok'));
    await expect(inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, { ...c.deps, approvals })).rejects.toThrow(
      new ApprovalPolicyInvalid(
        "The run's approval policy names docs__serach, which is not among the tools its MCP server lists (docs__search, docs__fetch); the run stops rather than let the tool it meant run without approval.",
      ),
    );
    expect(c.model.requests).toHaveLength(0);
    // Spelled as listed, the run goes on; a server that could not be listed offers nothing to gate.
    approvals.policies.set('run-1', ['docs__search', 'down__anything']);
    expect((await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, { ...c.deps, approvals })).stopReason).toBe('end_turn');
  });

  it('finds the MCP names of a policy that a catalog does not list, and only those', () => {
    const catalog = { tools: [tool('docs__search'), { ...tool('word_count'), source: 'lambda' }], unavailable: [{ source: 'mcp:down', reason: 'refused', agents: [] }] };
    expect(unlistedPolicyTools(['calculator', 'word_count', 'docs__search', 'docs__serach', 'down__x', 'other__y'], catalog)).toEqual(['docs__serach', 'other__y']);
  });

  it('calls an external tool once, stores its result, and answers a retry from the store', async () => {
    const docs = new FakeSource('mcp:docs', [tool('docs__search')]);
    const c = await core([docs]);
    c.model.addTurn(use(['toolu_1', 'docs__search', { q: 'x' }]));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, c.deps);
    const input = { runId: 'run-1', agent: 'single' as const, seq: step.seq, toolUseId: 'toolu_1' };

    expect(await toolStep(input, c.deps)).toEqual({ toolUseId: 'toolu_1', isError: false });
    expect(await toolStep(input, c.deps)).toEqual({ toolUseId: 'toolu_1', isError: false });
    expect(docs.calls).toEqual([['docs__search', { q: 'x' }]]);
    // The step's keys go with the call, so the tool itself can deduplicate a retried step.
    expect(docs.contexts).toEqual([{ runId: 'run-1', toolUseId: 'toolu_1' }]);
    const turn = await c.conversations.loadTurn(conversationIdOf('run-1', 'single'), step.seq);
    expect(turn?.results[0]).toEqual({ type: 'tool_result', tool_use_id: 'toolu_1', content: marked('docs__search', 'search ok') });
  });

  it('turns an error outcome and a thrown error into error results, and lets infrastructure faults through', async () => {
    class Unavailable extends InfrastructureError {
      override readonly name = 'StoreUnavailable';
    }
    const docs = new FakeSource('mcp:docs', [tool('docs__a'), tool('docs__b'), tool('docs__c')], ['single'], async (t) => {
      if (t.name === 'docs__a') return { content: 'no such page', isError: true };
      if (t.name === 'docs__b') throw new Error('socket hang up');
      throw new Unavailable('down');
    });
    const c = await core([docs]);
    c.model.addTurn(use(['toolu_a', 'docs__a', {}], ['toolu_b', 'docs__b', {}], ['toolu_c', 'docs__c', {}], ['toolu_d', 'docs__zzz', {}]));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, c.deps);
    const run = (toolUseId: string) => toolStep({ runId: 'run-1', agent: 'single', seq: step.seq, toolUseId }, c.deps);

    expect(await run('toolu_a')).toEqual({ toolUseId: 'toolu_a', isError: true });
    expect(await run('toolu_b')).toEqual({ toolUseId: 'toolu_b', isError: true });
    await expect(run('toolu_c')).rejects.toThrow(Unavailable);
    expect(await run('toolu_d')).toEqual({ toolUseId: 'toolu_d', isError: true });
    const turn = await c.conversations.loadTurn(conversationIdOf('run-1', 'single'), step.seq);
    expect(turn?.results.map((r) => r?.content)).toEqual([
      marked('docs__a', 'no such page'),
      marked('docs__b', 'docs__b failed: socket hang up'),
      undefined,
      'Unknown tool "docs__zzz". Available tools: calculator, read_file, write_file, list_files, edit_file, docs__a, docs__b, docs__c.',
    ]);
  });

  it('does not let an agent call an external tool it was not given', async () => {
    const docs = new FakeSource('mcp:docs', [tool('docs__search', 'mcp:docs', ['coder'])]);
    const c = await core([docs]);
    c.model.addTurn(use(['toolu_1', 'docs__search', {}]));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, c.deps);

    expect(await toolStep({ runId: 'run-1', agent: 'single', seq: step.seq, toolUseId: 'toolu_1' }, c.deps)).toEqual({ toolUseId: 'toolu_1', isError: true });
    expect(docs.calls).toEqual([]);
  });
});

describe('a run\'s catalog, further', () => {
  it('keeps the first of two tools listed under one name, and says so', async () => {
    const external = new ExternalTools(
      [new FakeSource('mcp:a', [tool('x__search', 'mcp:a')]), new FakeSource('mcp:b', [tool('x__search', 'mcp:b')])],
      new MemoryCatalogStore(),
      { clock: fixedClock },
    );
    expect(await external.forRun('run-1')).toEqual({
      tools: [tool('x__search', 'mcp:a')],
      unavailable: [{ source: 'mcp:b', reason: 'tool x__search is listed twice; the first one is kept', agents: [] }],
      listedAt: '2026-01-01T00:00:00.000Z',
    });
  });

  it('logs a source that is down', async () => {
    const logged: [string, Record<string, unknown>][] = [];
    const external = new ExternalTools([new FakeSource('mcp:down', [])], new MemoryCatalogStore(), { clock: fixedClock, log: (m, d) => void logged.push([m, d]) });
    await external.forRun('run-1');
    expect(logged).toEqual([['External tool source unavailable; its tools are left out of the run', { source: 'mcp:down', reason: 'connect ECONNREFUSED 127.0.0.1:9' }]]);
  });

  it('reads a stored catalog once per function, and keeps the 200 newest runs', async () => {
    const store = new MemoryCatalogStore();
    let reads = 0;
    const counting: ToolCatalogStore = { getCatalog: (runId) => (reads++, store.getCatalog(runId)), putCatalog: (runId, c) => store.putCatalog(runId, c) };
    const external = new ExternalTools([new FakeSource('mcp:docs', [tool('docs__search')])], counting, { clock: fixedClock });
    for (let i = 0; i <= 200; i++) await external.forRun(`run-${i}`);
    reads = 0;
    await external.stored('run-200');
    await external.stored('run-1');
    await external.stored('run-0');
    expect(reads).toBe(1);
  });

  it('answers a call of a tool whose source this deployment no longer has as refused, not run', async () => {
    const external = new ExternalTools([], new MemoryCatalogStore());
    expect(await external.call(tool('gone__x', 'mcp:gone'), {}, { runId: 'run-1', toolUseId: 't' })).toEqual({
      content: 'gone__x is not available in this deployment any more.',
      isError: true,
      ran: false,
    });
  });

  it('leaves a refused external call out of the actions the run took', async () => {
    const c = await memoryCore('Search.');
    const store = new MemoryCatalogStore();
    await new ExternalTools([new FakeSource('mcp:docs', [tool('docs__search')])], store).forRun('run-1');
    // The server was removed from the deployment after the run began.
    const deps = { ...c.deps, externalTools: new ExternalTools([], store) };
    c.model.addTurn(use(['toolu_1', 'docs__search', {}]), say('It is gone.'));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, deps);
    await toolStep({ runId: 'run-1', agent: 'single', seq: step.seq, toolUseId: 'toolu_1' }, deps);
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 1 }, deps);
    expect(c.runs.runs.get('run-1')?.result).toEqual({ response: 'It is gone.', actionsTaken: [] });
  });

  it('lists an external call that ran among the actions the run took', async () => {
    const c = await memoryCore('Search.');
    const deps = { ...c.deps, externalTools: new ExternalTools([new FakeSource('mcp:docs', [tool('docs__search')])], new MemoryCatalogStore()) };
    c.model.addTurn(use(['toolu_1', 'docs__search', { q: 'x' }]), say('Found it.'));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, deps);
    await toolStep({ runId: 'run-1', agent: 'single', seq: step.seq, toolUseId: 'toolu_1' }, deps);
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 1 }, deps);
    expect(c.runs.runs.get('run-1')?.result).toEqual({ response: 'Found it.', actionsTaken: ['docs__search {"q":"x"}'] });
  });
});

describe('Lambda tools', () => {
  const configs = [
    { name: 'word_count', description: 'Counts words.', inputSchema: { type: 'object' as const }, functionName: 'wc' },
    { name: 'plan_check', description: 'Checks a plan.', inputSchema: { type: 'object' as const }, functionName: 'pc', agents: ['architect' as const] },
  ];

  it('are catalog entries served by lambda, for the acting agents unless their config names others', () => {
    expect(lambdaCatalogEntries(configs)).toEqual([
      { name: 'word_count', description: 'Counts words.', inputSchema: { type: 'object' }, source: 'lambda', target: 'wc', agents: ['single', 'coder'], capabilities: ['untrusted', 'egress'] },
      { name: 'plan_check', description: 'Checks a plan.', inputSchema: { type: 'object' }, source: 'lambda', target: 'pc', agents: ['architect'], capabilities: ['untrusted', 'egress'] },
    ]);
  });

  it('are listed, not called, where only the catalog is needed', async () => {
    const source = listedLambdaTools(configs);
    expect({ id: source.id, agents: source.agents, tools: await source.list() }).toEqual({
      id: 'lambda',
      agents: ['single', 'coder', 'architect'],
      tools: lambdaCatalogEntries(configs),
    });
    await expect(source.call(lambdaCatalogEntries(configs)[0] as ExternalTool, {}, { runId: 'r', toolUseId: 't' })).rejects.toThrow(
      'This function lists Lambda tools but does not call them.',
    );
  });
});

describe('unavailableNote', () => {
  it('names each source that was down for the agent once, and says nothing when none was', () => {
    const catalog: ToolCatalog = {
      tools: [],
      unavailable: [
        { source: 'mcp:a', reason: 'down', agents: ['single'] },
        { source: 'mcp:b', reason: 'down', agents: ['single', 'coder'] },
        { source: 'mcp:a', reason: 'tool listed twice', agents: ['single'] },
      ],
      listedAt: '2026-01-01T00:00:00.000Z',
    };
    expect([unavailableNote(catalog, agentProfile('single').usesSource), unavailableNote(catalog, agentProfile('architect').usesSource), unavailableNote(undefined, agentProfile('single').usesSource)]).toEqual([
      '\n\nSome external tools could not be listed when this run began and are not offered: mcp:a, mcp:b.',
      '',
      '',
    ]);
  });
});

describe('gated external tools', () => {
  const wordCount: ExternalTool = {
    name: 'word_count',
    description: 'Counts words.',
    inputSchema: { type: 'object', properties: { text: { type: 'string', minLength: 1 } }, required: ['text'], additionalProperties: false },
    source: 'lambda',
    target: 'word-count',
    agents: ['single', 'coder'],
  };
  const odd = { ...tool('docs__odd'), inputSchema: { type: 'object', properties: { q: { type: 'nope' } } } };

  /** A run that gates word_count and docs__odd, whose model has just called `name`. */
  async function gated(name: string, callInput: Record<string, unknown>, rules: ApprovalRule[] = []) {
    const lambda = new FakeSource('lambda', [wordCount]);
    const docs = new FakeSource('mcp:docs', [tool('docs__search'), odd]);
    const c = await core([lambda, docs], 'Count.');
    const approvals = new MemoryApprovalStore();
    approvals.policies.set('run-1', ['word_count', 'docs__odd']);
    if (rules.length) approvals.rules.set('run-1', rules);
    const deps = { ...c.deps, approvals, tokens: new RecordingTokens(), catalogs: c.store, clock: fixedClock };
    c.model.addTurn(use(['toolu_1', name, callInput], ['toolu_2', 'docs__search', { q: 'free' }]));
    const step = await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, deps);
    const call = { runId: 'run-1', agent: 'single' as const, seq: step.seq, toolUseId: 'toolu_1' };
    const run = { runId: 'run-1', status: 'running' as const };
    return { ...c, lambda, docs, approvals, deps, step, call, run };
  }

  it('wait for a decision and run with the reviewer\'s edited input, checked against the schema the run was offered', async () => {
    const g = await gated('word_count', { text: 'a b' });
    expect(g.step.toolCalls).toEqual([
      { id: 'toolu_1', name: 'word_count', needsApproval: true },
      { id: 'toolu_2', name: 'docs__search', needsApproval: false },
    ]);
    expect(await requestApproval({ step: 'request', ...g.call }, g.deps)).toMatchObject({ decided: false, detail: { name: 'word_count' } });
    const refused = decideApproval(g.run, 'toolu_1', { decision: 'approve', input: { words: 'a b c' } }, 'rita', g.deps);
    await expect(refused).rejects.toBeInstanceOf(InvalidEditedInput);
    await expect(refused).rejects.toMatchObject({
      issues: [
        { path: 'input.text', message: "must have required property 'text'" },
        { path: 'input.words', message: 'must NOT have additional properties' },
      ],
    });
    expect((await g.approvals.get('run-1', 'toolu_1'))?.decision).toBeUndefined();

    await decideApproval(g.run, 'toolu_1', { decision: 'approve', input: { text: 'a b c' } }, 'rita', g.deps);
    expect(await toolStep({ ...g.call, needsApproval: true }, g.deps)).toEqual({ toolUseId: 'toolu_1', isError: false });
    expect(g.lambda.calls).toEqual([['word_count', { text: 'a b c' }]]);
    const turn = await g.conversations.loadTurn('run/run-1/single', g.step.seq);
    expect(turn?.results[0]?.content).toEqual(
      expect.stringMatching(/^A reviewer edited this call's input before it ran; it ran with: \{"text":"a b c"\}\n\n<untrusted-data-(\w{16}) source="word_count">\nword-count ok\n<\/untrusted-data-\1>$/),
    );
  });

  it('refuse an edited input no schema can check: a tool the run was not offered, a schema that does not compile', async () => {
    const g = await gated('docs__odd', { q: 'x' });
    await requestApproval({ step: 'request', ...g.call }, g.deps);
    await expect(decideApproval(g.run, 'toolu_1', { decision: 'approve', input: { q: 'y' } }, 'rita', g.deps)).rejects.toMatchObject({
      name: 'InvalidEditedInput',
      issues: [{ path: 'input', message: 'the input schema of docs__odd cannot be checked here, so its input cannot be edited' }],
    });
    const missing = { runId: 'run-1', agent: 'single' as const, name: 'docs__gone' };
    await expect(checkEditedInput(missing, {}, g.deps.catalogs)).rejects.toMatchObject({
      issues: [{ path: 'input', message: 'docs__gone is not a tool this run offers; its input cannot be edited' }],
    });
    await expect(checkEditedInput({ ...missing, name: 'word_count' }, { text: 'x' })).rejects.toBeInstanceOf(InvalidEditedInput);
    // Approving it unedited runs it.
    await decideApproval(g.run, 'toolu_1', { decision: 'approve' }, 'rita', g.deps);
    expect(await toolStep({ ...g.call, needsApproval: true }, g.deps)).toEqual({ toolUseId: 'toolu_1', isError: false });
    expect(g.docs.calls).toEqual([['docs__odd', { q: 'x' }]]);
  });

  it('are decided by the rules that name them: a denied call never reaches its tool', async () => {
    const g = await gated('word_count', { text: 'secret plans' }, [{ tool: 'word_count', input: { text: 'secret*' }, action: 'deny' }]);
    expect(await requestApproval({ step: 'request', ...g.call }, g.deps)).toEqual({ decided: true });
    expect(await toolStep({ ...g.call, needsApproval: true }, g.deps)).toEqual({ toolUseId: 'toolu_1', isError: true });
    expect(g.lambda.calls).toEqual([]);
    expect((await g.approvals.get('run-1', 'toolu_1'))).toMatchObject({ decision: 'deny', decidedBy: 'rule:0' });
  });
});
