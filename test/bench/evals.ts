/**
 * Run on its own (`tsx test/bench/evals.ts`, as `npm run bench` does): an eval suite of 50 cases
 * at concurrency 10 through the local stack, as `stepwise eval` runs it (docs/evals.md), with the
 * offline model answering at once and a scripted judge grading every fifth case. Target: under
 * 2 minutes. Printed, not asserted.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cliClient } from '../../bin/cli/client.js';
import { evalCommand, nodeIo } from '../../bin/cli/eval.js';
import type { EvalReport, EvalSuite } from '../../functions/core/evals/types.js';
import { offlineResponder } from '../../local/offline/model.js';
import type { WireRequest } from '../../local/stand-ins/messages-api.js';
import { use } from '../support/agents.js';
import { startFixture } from '../support/local-stack.js';
import { row } from './table.js';

export interface EvalFigures {
  cases: number;
  concurrency: number;
  wallMs: number;
  caseMs: number[];
  report: EvalReport;
}

/** 50 arithmetic cases, every fifth also graded by the judge, every third with a file seeded and read. */
export function benchSuite(cases = 50): EvalSuite {
  return {
    name: 'bench',
    mode: 'single',
    cases: Array.from({ length: cases }, (_, i) => {
      const [a, b] = [100 + i, 7 + (i % 13)];
      const seeded = i % 3 === 0;
      return {
        id: `case-${String(i).padStart(2, '0')}`,
        goal: seeded ? `Read numbers-${i}.txt. What is ${a} times ${b}?` : `What is ${a} times ${b}?`,
        ...(seeded ? { files: { [`numbers-${i}.txt`]: `${a} ${b}` } } : {}),
        expect: [
          { type: 'contains' as const, value: (a * b).toLocaleString('en-US') },
          { type: 'toolCalled' as const, tool: 'calculator', times: 1 },
          ...(i % 5 === 0 ? [{ type: 'judge' as const, rubric: 'The answer gives the product.' }] : []),
        ],
      };
    }),
  };
}

const isJudgeRun = (body: WireRequest) => JSON.stringify(body.messages[0]?.content ?? '').includes("Grade an AI agent's answer");

export async function measureEvals(cases = 50, concurrency = 10): Promise<EvalFigures> {
  const offline = offlineResponder({ charsPerSecond: 0 });
  const respond = (body: WireRequest, n: number) => (isJudgeRun(body) ? { turn: use(['toolu_verdict', 'final_answer', { pass: true, reason: 'It gives the product.' }]) } : offline(body, n));
  const fixture = await startFixture({ STEPWISE_MODEL: 'stepwise-offline' }, { respond });
  try {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-bench-evals-'));
    const suitePath = join(dir, 'suite.json');
    const out = join(dir, 'report.json');
    const io = { ...nodeIo, stdout: () => undefined, stderr: { write: () => true }, readFile: async (path: string) => (path === suitePath ? JSON.stringify(benchSuite(cases)) : nodeIo.readFile(path)) };
    const api = cliClient({ endpoint: fixture.stack.url });
    const started = performance.now();
    await evalCommand(api, suitePath, { concurrency, timeout: 120, markdown: false, json: false, out }, io);
    const wallMs = performance.now() - started;
    const report = JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
    return { cases, concurrency, wallMs, caseMs: report.cases.map((c) => c.durationMs), report };
  } finally {
    await fixture.close();
  }
}

export function evalsReport(figures: EvalFigures): string {
  const sorted = [...figures.caseMs].sort((a, b) => a - b);
  const at = (q: number) => ((sorted[Math.floor(sorted.length * q)] ?? 0) / 1000).toFixed(1);
  const s = figures.report.summary;
  return [
    `\n## An eval suite on the local stack (${figures.cases} cases at concurrency ${figures.concurrency}, offline model at once; target: under 2 minutes)\n`,
    row(['cases', 'concurrency', 'wall s', 'case s (median)', 'case s (p95)', 'passed', 'failed', 'errors']),
    row(['---', '---', '---', '---', '---', '---', '---', '---']),
    row([figures.cases, figures.concurrency, (figures.wallMs / 1000).toFixed(1), at(0.5), at(0.95), s.passed, s.failed, s.errored]),
  ].join('\n');
}

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
console.log(evalsReport(await measureEvals()));
