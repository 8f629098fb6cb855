import { afterAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { McpToolSource } from '../../functions/adapters/mcp-tools.js';
import type { WireRequest } from '../../functions/local/messages-api.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';
import { type TestMcpServer, startMcpServer } from '../support/mcp-server.js';

// The servers start before the stack, whose handler modules read their URLs when they load.
let extraTool = false;
const docs = await startMcpServer((server, calls) => {
  server.registerTool(
    'search',
    { description: 'Searches the docs.', inputSchema: { query: z.string() } },
    ({ query }) => {
      calls.push({ name: 'search', args: { query } });
      return { content: [{ type: 'text', text: `3 pages mention "${query}"` }] };
    },
  );
  server.registerTool('fail', { description: 'Always fails.', inputSchema: {} }, () => {
    calls.push({ name: 'fail', args: {} });
    return { content: [{ type: 'text', text: 'the index is rebuilding' }], isError: true };
  });
  server.registerTool('slow', { description: 'Takes its time.', inputSchema: {} }, async () => {
    await new Promise((r) => setTimeout(r, 3_000));
    return { content: [{ type: 'text', text: 'late' }] };
  });
  server.registerTool('page.get', { description: 'Reads one page.', inputSchema: { id: z.number() } }, ({ id }) => ({
    content: [{ type: 'text', text: `page ${id}` }],
  }));
  // A tool that appears mid-run: a run that has started never sees it.
  if (extraTool) server.registerTool('late', { description: 'Added later.', inputSchema: {} }, () => ({ content: [] }));
});
const gone = await startMcpServer((server) => {
  server.registerTool('ping', { description: 'Answers pong.', inputSchema: {} }, () => ({ content: [{ type: 'text', text: 'pong' }] }));
});
const down = await startMcpServer(() => undefined);
await down.close();

const local = useLocalStack({
  STEPWISE_MCP_SERVERS: JSON.stringify([
    { name: 'docs', url: docs.url },
    { name: 'gone', url: gone.url },
    { name: 'down', url: down.url },
  ]),
  STEPWISE_EXTERNAL_TOOL_TIMEOUT_MS: '1000',
  STEPWISE_MCP_LIST_TIMEOUT_MS: '2000',
});
afterAll(async () => {
  await Promise.all([docs.close(), gone.close()]);
});

type Result = { tool_use_id: string; content: string; is_error?: boolean };
const toolNames = (request: WireRequest | undefined) => (request?.tools as { name: string }[] | undefined)?.map((t) => t.name);
const resultsOf = (request: WireRequest | undefined) => (request?.messages.at(-1)?.content as Result[]).map(({ tool_use_id, content, is_error }) => ({ tool_use_id, content, is_error }));

describe('MCP tools in a run', () => {
  it('offers the tools of the reachable servers as server__tool, calls them, and turns every failure into an error result', async () => {
    const tag = local.book.respondWith('mcp', (_body, n) => {
      if (n > 0) return { turn: say('Done.') };
      // After the run has listed its tools: one server changes its tools, another goes away.
      extraTool = true;
      void gone.close();
      return {
        turn: use(
          ['toolu_1', 'docs__search', { query: 'stepwise' }],
          ['toolu_2', 'docs__fail', {}],
          ['toolu_3', 'down__anything', {}],
          ['toolu_4', 'gone__ping', {}],
          ['toolu_5', 'docs__slow', {}],
          ['toolu_6', 'calculator', { operation: 'add', a: 2, b: 3 }],
          ['toolu_7', 'docs__page_get', { id: 7 }],
        ),
      };
    });
    const run = await local.run(`${tag} Search the docs.`);

    expect(run).toMatchObject({ status: 'succeeded', result: { response: 'Done.' } });
    const [first, second] = local.book.requests.get('mcp') ?? [];
    expect(toolNames(first)).toEqual([
      'calculator',
      'read_file',
      'write_file',
      'list_files',
      'edit_file',
      'docs__search',
      'docs__fail',
      'docs__slow',
      'docs__page_get',
      'gone__ping',
    ]);
    expect((first?.tools as unknown[])[5]).toEqual({
      name: 'docs__search',
      description: 'Searches the docs.',
      input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    });
    expect(JSON.stringify(first?.system)).toContain('not offered: mcp:down');
    // The second request carries the very same tools and system prompt (prompt caching), though
    // a server has added a tool and another has gone since.
    expect(JSON.stringify(second?.tools)).toBe(JSON.stringify(first?.tools));
    expect(JSON.stringify(second?.system)).toBe(JSON.stringify(first?.system));

    const results = resultsOf(second);
    expect(results[0]).toEqual({ tool_use_id: 'toolu_1', content: '3 pages mention "stepwise"', is_error: undefined });
    expect(results[1]).toEqual({ tool_use_id: 'toolu_2', content: 'the index is rebuilding', is_error: true });
    expect(results[2]?.is_error).toBe(true);
    expect(results[2]?.content).toMatch(/^Unknown tool "down__anything"\. Available tools: calculator, .*docs__search/);
    expect(results[3]?.is_error).toBe(true);
    expect(results[3]?.content).toMatch(/^gone__ping failed: /);
    expect(results[4]?.is_error).toBe(true);
    expect(results[4]?.content).toMatch(/^docs__slow failed: .*(timed out|Timeout)/i);
    expect(results[5]).toEqual({ tool_use_id: 'toolu_6', content: '5', is_error: undefined });
    expect(results[6]).toEqual({ tool_use_id: 'toolu_7', content: 'page 7', is_error: undefined });
    expect(docs.calls).toEqual([
      { name: 'search', args: { query: 'stepwise' } },
      { name: 'fail', args: {} },
    ]);
  });
});

describe('the MCP adapter', () => {
  let server: TestMcpServer;
  afterAll(async () => server?.close());

  it('lists with names for the model and keeps the server\'s own name for the call', async () => {
    server = await startMcpServer((s) => {
      s.registerTool('echo.v2', { description: 'Echoes.', inputSchema: { text: z.string() } }, ({ text }) => ({
        content: [{ type: 'text', text }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }],
      }));
    });
    const source = new McpToolSource({ name: 'tools', url: server.url, agents: ['coder'] });
    const [tool] = await source.list();
    expect(tool).toMatchObject({ name: 'tools__echo_v2', target: 'echo.v2', source: 'mcp:tools', agents: ['coder'] });
    expect(tool && (await source.call(tool, { text: 'hi' }))).toEqual({ content: 'hi\n[image (image/png), not shown]', isError: false });
    await source.close();
  });

  it('fails to list a server that is down, so the run leaves it out', async () => {
    const source = new McpToolSource({ name: 'down', url: down.url }, { listTimeoutMs: 1000 });
    await expect(source.list()).rejects.toThrow();
  });
});
