/**
 * Bad input at every HTTP boundary: generated bodies, query strings and path parameters across
 * the routes. The answer is never a 500, and a 4xx writes nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryApi } from '../support/api.js';

const nasty = fc.oneof(
  fc.string(),
  fc.constantFrom('..', '../..', '%2e%2e%2f', '%00', '\u0000', '/etc/passwd', 'a'.repeat(3000), '', ' ', '%', '%ZZ', '☃', '\u202e', 'ｆｉｌｅ'),
  fc.webPath(),
);

describe('every route under generated input', () => {
  it('answers 2xx or 4xx, never 5xx, and 4xx writes nothing', async () => {
    const api = memoryApi();
    await api.request('POST', '/runs', { goal: 'seed', mode: 'single' });
    const seedWrites = api.writes();
    const request = fc.oneof(
      fc.record({ method: fc.constant('GET'), path: nasty.map((p) => `/runs/${encodeURIComponent(p)}`) }),
      fc.record({ method: fc.constant('GET'), path: fc.tuple(fc.constantFrom('run-1', 'nope'), nasty).map(([id, p]) => `/runs/${id}/files/${p}`) }),
      fc.record({ method: fc.constant('GET'), path: fc.tuple(fc.constantFrom('run-1', 'nope'), fc.dictionary(fc.string({ maxLength: 8 }), nasty)).map(([id, q]) => `/runs/${id}/messages?${new URLSearchParams(q)}`) }),
      fc.record({ method: fc.constant('POST'), path: nasty.map((p) => `/runs/${encodeURIComponent(p)}/cancel`) }),
      fc.record({
        method: fc.constant('POST'),
        path: fc.tuple(fc.constantFrom('run-1', 'nope'), nasty).map(([id, p]) => `/runs/${id}/approvals/${encodeURIComponent(p)}`),
        body: fc.oneof(fc.json(), fc.record({ decision: fc.oneof(fc.constantFrom('approve', 'deny'), fc.string()), reason: nasty }, { requiredKeys: [] }).map((b) => JSON.stringify(b))),
      }),
      fc.record({
        method: fc.constant('POST'),
        path: fc.constantFrom('run-1', 'nope').map((id) => `/runs/${id}/fork`),
        body: fc.oneof(
          fc.json(),
          fc
            .record({ fromSeq: fc.oneof(fc.integer(), fc.double(), nasty), goal: nasty, agent: fc.oneof(fc.constantFrom('single', 'architect', 'coder'), nasty) }, { requiredKeys: [] })
            .map((b) => JSON.stringify(b)),
        ),
      }),
      fc.record({ method: fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH'), path: fc.constantFrom('/runs', '/openapi.json', '/health', '/runs/run-1') }),
      fc.record({ method: fc.constant('POST'), path: fc.constant('/runs'), body: fc.oneof(fc.json(), fc.string(), fc.anything().map((v) => JSON.stringify(v ?? null))) }),
    );
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const before = api.writes();
        let res: Response;
        try {
          res = await api.app.request(r.path, {
            method: r.method,
            ...('body' in r ? { body: r.body, headers: { 'content-type': 'application/json' } } : {}),
          });
        } catch {
          // A path the URL parser itself refuses never reaches a route.
          return;
        }
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400) expect(api.writes()).toBe(before);
      }),
      { numRuns: 1500 },
    );
    expect(api.writes()).toBeGreaterThanOrEqual(seedWrites);
  }, 120_000);
});
