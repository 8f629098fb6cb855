/**
 * The MCP server in `npm run bench` (`npx tsx test/bench/mcp.ts` alone): what a `start_run` →
 * `get_run` round trip through `/mcp` costs over the same two HTTP routes it calls, the official
 * SDK client against plain requests, alternated so both see the same machine: on the local server
 * (real HTTP, runs going on behind the requests), and in-process on the in-memory stores (the
 * MCP layer alone). Printed, not asserted (target: under 5 ms added).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { say } from '../support/agents.js';
import { memoryApi } from '../support/api.js';
import { startFixture } from '../support/local-stack.js';
import { callTool, connectMcp } from '../support/mcp-client.js';
import { row } from './table.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)] ?? 0;

/** Round trip times of one setting. */
export interface RoundTrips {
  where: string;
  httpMs: number[];
  mcpMs: number[];
}

export interface McpFigures {
  rounds: number;
  settings: RoundTrips[];
}

/** A start-and-read through the routes, and the same through the MCP tools, in ms. */
interface Trips {
  http(): Promise<number>;
  mcp(): Promise<number>;
}

/** Alternates the two, after a warm-up of 20 each. */
async function alternate(where: string, trips: Trips, rounds: number): Promise<RoundTrips> {
  for (let i = 0; i < 20; i++) {
    await trips.http();
    await trips.mcp();
  }
  const figures: RoundTrips = { where, httpMs: [], mcpMs: [] };
  for (let i = 0; i < rounds; i++) {
    figures.httpMs.push(await trips.http());
    figures.mcpMs.push(await trips.mcp());
  }
  return figures;
}

/** The MCP half of a round trip: start_run, then get_run of the run it started. */
async function mcpTrip(client: Client): Promise<number> {
  const t0 = performance.now();
  const started = await callTool(client, 'start_run', { goal: 'Bench.', mode: 'single' });
  const read = await callTool(client, 'get_run', { runId: String(started.structuredContent?.runId) });
  if (read.isError) throw new Error(`get_run failed: ${JSON.stringify(read.content)}`);
  return performance.now() - t0;
}

/** The same through `fetch` (`request`): POST /runs, then GET /runs/{runId}. */
async function httpTrip(request: (path: string, init?: RequestInit) => Promise<Response>): Promise<number> {
  const t0 = performance.now();
  const started = await request('/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal: 'Bench.', mode: 'single' }) });
  const { runId } = (await started.json()) as { runId: string };
  const read = await request(`/runs/${runId}`);
  if (!read.ok) throw new Error(`GET /runs/${runId} answered ${read.status}.`);
  await read.json();
  return performance.now() - t0;
}

/** `rounds` round trips each way, on the local server and in-process. */
export async function measureMcp(rounds = 200): Promise<McpFigures> {
  const settings = [await inProcess(rounds)];
  // The model answers at once: each run ends after one model call, behind the measured requests.
  const fixture = await startFixture({}, { respond: () => ({ turn: say('Done.') }) });
  try {
    const client = await connectMcp(fixture.stack.url);
    const request = (path: string, init?: RequestInit) => fetch(`${fixture.stack.url}${path}`, init);
    settings.unshift(await alternate('local server (HTTP, emulators)', { http: () => httpTrip(request), mcp: () => mcpTrip(client) }, rounds));
    await client.close();
    await fixture.stack.runtime.idle();
  } finally {
    await fixture.close();
  }
  return { rounds, settings };
}

/** The API on its in-memory stores, requests handed to it in-process: what the MCP layer adds, alone. */
async function inProcess(rounds: number): Promise<RoundTrips> {
  const api = memoryApi();
  const request = async (path: string, init?: RequestInit) => api.app.request(path, init);
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('http://stepwise.bench/mcp'), { fetch: (url, init) => request(new URL(String(url)).pathname, init) }));
  const figures = await alternate('in-process (in-memory stores)', { http: () => httpTrip(request), mcp: () => mcpTrip(client) }, rounds);
  await client.close();
  return figures;
}

export function mcpReport(f: McpFigures): string {
  return [
    `\n## MCP server: start_run → get_run against POST /runs → GET /runs/{runId} (${f.rounds} round trips each, alternated)\n`,
    row(['where', 'HTTP routes median ms', 'MCP tools median ms', 'added by MCP, median ms', 'HTTP p95', 'MCP p95']),
    row(['---', '---', '---', '---', '---', '---']),
    ...f.settings.map((s) =>
      row([s.where, median(s.httpMs).toFixed(2), median(s.mcpMs).toFixed(2), (median(s.mcpMs) - median(s.httpMs)).toFixed(2), p95(s.httpMs).toFixed(2), p95(s.mcpMs).toFixed(2)]),
    ),
    '\nTarget: under 5 ms added. Each MCP call is one POST of JSON-RPC (a new server and transport per request, the route called in-process); the client is the official SDK\'s.',
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(mcpReport(await measureMcp()));
