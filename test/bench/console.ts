/**
 * The console's figures for `npm run bench`: what the first load of a run page weighs
 * (compressed), and in headless Chromium the first paint of a run page and how long a finished
 * 200-message run takes to draw, read as pages of its events (polling) and from an event stream. The API is
 * a stand-in serving one prepared run, so the figures are the console's own. Printed, not asserted.
 */
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { chromium } from 'playwright-core';
import { type ConsoleFile, buildConsole } from '../../console/build.js';
import { ScriptedModel } from '../../functions/adapters/model/scripted.js';
import { runAgentLoop } from '../../functions/core/steps/loop.js';
import { consoleRoutes } from '../../local/console.js';
import { chromiumPath } from '../support/browser.js';
import { memoryApi } from '../support/api.js';
import { sseBody } from '../support/console-events.js';
import { row } from './table.js';

export interface ConsoleFigures {
  firstLoad: { files: number; raw: number; gzip: number; brotli: number };
  all: { files: number; gzip: number };
  /** Milliseconds from navigation to the first contentful paint of a run page (median of 5). */
  firstPaintMs: number[];
  /** 200-message run, read as pages of events: navigation to drawn, and drawn after its last response arrived. */
  rest: { totalMs: number[]; renderMs: number[] };
  /** The same run as an event stream. */
  stream: { totalMs: number[]; renderMs: number[] };
}

const runId = 'bench-run';

/**
 * A finished single-mode run of 200 messages (100 turns of text and a tool call, each answered),
 * run by the core on in-memory stores: its record, and its events as the API derives them (the
 * events the stream sends and the pages give).
 */
async function benchRun(): Promise<{ run: unknown; events: { id: string; event: unknown }[] }> {
  const api = memoryApi({ newId: () => runId });
  const model = new ScriptedModel();
  for (let i = 1; i < 200; i += 2) {
    const text = `Chapter ${i} is next. It covers **parsing**, \`tokens\` and a list:\n\n- one\n- two\n\n${'Some prose about the chapter. '.repeat(8)}`;
    await api.workspace(runId).write(`chapters/${i}.md`, new TextEncoder().encode(`# Chapter ${i}\n${'lorem ipsum '.repeat(80)}`));
    model.addTurn({ content: [{ type: 'text', text }, { type: 'tool_use', id: `toolu_${i}`, name: 'read_file', input: { path: `chapters/${i}.md` } }] });
  }
  model.addTurn({ content: [{ type: 'text', text: 'All chapters are summarized.' }] });
  await api.request('POST', '/runs', { goal: 'Read every chapter and summarize it.', mode: 'single', maxIterations: 200 });
  const outcome = await runAgentLoop(
    { runId, agent: 'single', maxIterations: 200 },
    { conversations: api.conversations, runs: api.runs, model, settings: { model: 'claude-sonnet-4-5', maxTokens: 1024 }, workspaceFor: api.workspace },
  );
  await api.runs.finish(runId, { status: 'succeeded', phase: 'complete', result: { response: outcome.response, actionsTaken: [] } });
  const run = (await api.request('GET', `/runs/${runId}`)).body;
  const page = (await api.request('GET', `/runs/${runId}/events/page`)).body as { items: { id: string; event: unknown }[] };
  return { run, events: page.items };
}

/** A stand-in API with one run, and the console; `stream` decides whether it has the events route. */
async function serveBench(files: ConsoleFile[], stream: boolean): Promise<{ url: string; close(): Promise<void> }> {
  const { run, events } = await benchRun();
  const app = new Hono();
  app.route('/', consoleRoutes({ auth: 'local', tools: [], gatedTools: [] }, () => files));
  app.get('/openapi.json', (c) => c.json({}));
  app.get(`/runs/${runId}`, (c) => c.json(run));
  app.get(`/runs/${runId}/files`, (c) => c.json({ items: [] }));
  app.get(`/runs/${runId}/events/page`, (c) => {
    const after = c.req.query('after');
    return c.json({ items: events.slice(after ? events.findIndex((e) => e.id === after) + 1 : 0), done: true });
  });
  app.get(`/runs/${runId}/events`, (c) => {
    if (!stream) return c.json({ error: { code: 'NotFound', message: 'No route.' } }, 404);
    return c.body(sseBody(events as Parameters<typeof sseBody>[0]), 200, { 'content-type': 'text/event-stream' });
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export async function measureConsole(rounds = 5): Promise<ConsoleFigures> {
  const build = buildConsole();
  const index = new TextDecoder().decode(build.files.find((f) => f.path === 'index.html')?.bytes);
  const firstPaths = new Set(['index.html', ...[...index.matchAll(/(?:src|href)="\/console\/([^"]+)"/g)].map((m) => m[1] ?? '')]);
  const first = build.files.filter((f) => firstPaths.has(f.path));
  const sum = (fs: ConsoleFile[], size: (b: Uint8Array) => number) => fs.reduce((n, f) => n + size(f.bytes), 0);

  const browser = await chromium.launch({ executablePath: chromiumPath() });
  const figures: ConsoleFigures = {
    firstLoad: {
      files: first.length,
      raw: sum(first, (b) => b.length),
      gzip: sum(first, (b) => gzipSync(b).length),
      brotli: sum(first, (b) => brotliCompressSync(b).length),
    },
    all: { files: build.files.length, gzip: sum(build.files, (b) => gzipSync(b).length) },
    firstPaintMs: [],
    rest: { totalMs: [], renderMs: [] },
    stream: { totalMs: [], renderMs: [] },
  };
  try {
    for (const stream of [false, true]) {
      const site = await serveBench(build.files, stream);
      try {
        for (let i = 0; i < rounds; i++) {
          const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
          const page = await context.newPage();
          // Notes the moment the whole transcript is on the page (an init script runs whatever the CSP).
          await page.addInitScript(`new MutationObserver((_, observer) => {
            if (document.querySelectorAll('.transcript .call').length === 100 && document.querySelector('.transcript[data-state="ended"]')) {
              window.__drawn = performance.now();
              observer.disconnect();
            }
          }).observe(document, { childList: true, subtree: true, attributes: true });`);
          await page.goto(`${site.url}/console/runs/${runId}`);
          for (let waited = 0; !(await page.evaluate('window.__drawn !== undefined')); waited += 20) {
            if (waited > 30_000) throw new Error('The 200-message run was not drawn within 30 s.');
            await new Promise((r) => setTimeout(r, 20));
          }
          // In the page: the first contentful paint, and when the last response of the run's data ended.
          const timing = (await page.evaluate(`(() => {
            const paint = performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN;
            const data = performance.getEntriesByType('resource').filter((e) => /\\/runs\\/bench-run(\\/events(\\/page)?)?(\\?|$)/.test(e.name)).map((e) => e.responseEnd);
            return { drawn: window.__drawn, paint, lastData: Math.max(...data) };
          })()`)) as { drawn: number; paint: number; lastData: number };
          figures.firstPaintMs.push(timing.paint);
          const into = stream ? figures.stream : figures.rest;
          into.totalMs.push(timing.drawn);
          into.renderMs.push(timing.drawn - timing.lastData);
          await context.close();
        }
      } finally {
        await site.close();
      }
    }
  } finally {
    await browser.close();
  }
  return figures;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

export function consoleReport(f: ConsoleFigures): string {
  return [
    '\n## The console (headless Chromium; targets: first load < 200 KB compressed, a 200-message run drawn in < 1 s)\n',
    row(['measure', 'value']),
    row(['---', '---']),
    row([`first load of a run page (${f.firstLoad.files} files: page, script, styles, preloads)`, `${kib(f.firstLoad.gzip)} gzip, ${kib(f.firstLoad.brotli)} brotli (${kib(f.firstLoad.raw)} raw)`]),
    row([`every file of the build (${f.all.files}, with the chunks loaded on demand)`, `${kib(f.all.gzip)} gzip`]),
    row(['run page, first contentful paint (median)', `${median(f.firstPaintMs).toFixed(0)} ms`]),
    row(['200-message run from pages of its events (polling): navigation to drawn (median)', `${median(f.rest.totalMs).toFixed(0)} ms`]),
    row(['  of which drawing, after the last response arrived', `${median(f.rest.renderMs).toFixed(0)} ms`]),
    row(['200-message run from the event stream: navigation to drawn (median)', `${median(f.stream.totalMs).toFixed(0)} ms`]),
    row(['  of which folding and drawing, after the stream arrived', `${median(f.stream.renderMs).toFixed(0)} ms`]),
  ].join('\n');
}
