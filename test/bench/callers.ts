/**
 * Callers and owners in `npm run bench`: what reading the caller costs an API request (a local
 * issuer's token verified on each request, its key imported once), and how `GET /runs` pages
 * through 1,000 runs of one caller on the DynamoDB emulator. Printed, not asserted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearerCallers } from '../../functions/api/callers.js';
import { createApi } from '../../functions/api/app.js';
import { localCaller } from '../../functions/core/callers/types.js';
import type { Run } from '../../functions/core/runs/types.js';
import { zeroUsage } from '../../functions/core/model/messages.js';
import { wire } from '../../functions/wiring/wire.js';
import { localIssuerIn, localTenantClaim } from '../../local/issuer.js';
import { startEmulators } from '../../local/stand-ins/emulators.js';
import { RecordingStarter, memoryApi } from '../support/api.js';
import { row } from './table.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

export interface CallerFigures {
  /** Median ms of `GET /runs/{runId}` without a token (the local caller) and with one, on in-memory stores. */
  plainMs: number;
  tokenMs: number;
  /** `GET /runs` over 1,000 runs of one caller, 100 a page, on the DynamoDB emulator. */
  pages: number;
  listed: number;
  queriesPerPage: number[];
  pageMs: number[];
}

export async function measureCallers(): Promise<CallerFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-bench-issuer-'));
  try {
    const issuer = await localIssuerIn(dir);
    const api = memoryApi({ authenticate: bearerCallers((token) => issuer.verify(token), { tenantClaim: localTenantClaim, tenantOptional: true }, localCaller) });
    const token = await issuer.issue({ sub: 'alice', tenant: 'acme' });
    const started = await api.app.request('/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ goal: 'bench', mode: 'single' }),
    });
    const { runId } = (await started.json()) as { runId: string };
    await api.app.request('/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal: 'bench', mode: 'single' }) });
    const time = async (path: string, headers: Record<string, string>) => {
      const times: number[] = [];
      for (let i = 0; i < 2000; i++) {
        const t0 = performance.now();
        const res = await api.app.request(path, { headers });
        await res.arrayBuffer();
        times.push(performance.now() - t0);
      }
      return median(times.slice(200));
    };
    // Alternate, so both see the same warm-up and the same machine.
    const plainMs = await time('/runs/run-2', {});
    const tokenMs = await time(`/runs/${runId}`, { authorization: `Bearer ${token}` });
    return { plainMs, tokenMs, ...(await listing()) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 1,000 runs of one caller on the emulator, listed 100 a page: queries and ms per page. */
async function listing(): Promise<Pick<CallerFigures, 'pages' | 'listed' | 'queriesPerPage' | 'pageMs'>> {
  const emulators = await startEmulators();
  try {
    const wiring = wire({
      STEPWISE_TABLE: emulators.table,
      STEPWISE_BUCKET: emulators.bucket,
      STEPWISE_DYNAMODB_ENDPOINT: emulators.dynamoEndpoint,
      STEPWISE_S3_ENDPOINT: emulators.s3Endpoint,
    });
    const owner = { principal: 'stepwise-local#alice', tenant: 'acme' };
    const base = Date.UTC(2026, 0, 1);
    for (let start = 0; start < 1000; start += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, k) => {
          const i = start + k;
          const at = new Date(base + i * 1000).toISOString();
          const run: Run = { runId: `run-${i}`, mode: 'single', goal: `goal ${i}`, owner, status: 'succeeded', phase: 'complete', iterations: {}, usage: zeroUsage, createdAt: at, updatedAt: at };
          return wiring.runs.create(run);
        }),
      );
    }
    const app = createApi({
      ...wiring,
      starter: new RecordingStarter(),
      newId: () => 'unused',
      tokens: { resume: async () => false },
      authenticate: async () => ({ ...owner, scopes: [] }),
    });
    const queriesPerPage: number[] = [];
    const pageMs: number[] = [];
    let listed = 0;
    let cursor: string | undefined;
    do {
      emulators.requests.reset();
      const t0 = performance.now();
      const res = await app.request(`/runs?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      const page = (await res.json()) as { items: unknown[]; nextCursor?: string };
      pageMs.push(performance.now() - t0);
      queriesPerPage.push((await emulators.requests.snapshot()).dynamo.Query ?? 0);
      listed += page.items.length;
      cursor = page.nextCursor;
    } while (cursor);
    return { pages: pageMs.length, listed, queriesPerPage, pageMs };
  } finally {
    await emulators.stop();
  }
}

/** The figures as the bench prints them. */
export function callersReport(f: CallerFigures): string {
  return [
    '\n## Callers and owners\n',
    row(['measure', 'value']),
    row(['---', '---']),
    row(['GET /runs/{runId}, no token (local caller), median ms', f.plainMs.toFixed(3)]),
    row(['GET /runs/{runId}, with a token verified, median ms', f.tokenMs.toFixed(3)]),
    row(['authorization added per request, ms', (f.tokenMs - f.plainMs).toFixed(3)]),
    row(['GET /runs over 1,000 runs of one caller: pages of 100 / runs listed', `${f.pages} / ${f.listed}`]),
    row(['DynamoDB Query requests per page (max)', Math.max(...f.queriesPerPage)]),
    row(['ms per page (median)', median(f.pageMs).toFixed(1)]),
  ].join('\n');
}
