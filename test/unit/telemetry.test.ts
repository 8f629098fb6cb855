/**
 * What the Lambda handlers write to stdout/stderr: Powertools JSON log lines that carry the step's
 * keys, and one EMF metric line per invocation. The handlers run on in-memory fakes.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ModelProvider } from '../../functions/core/model/types.js';
import type { RunStarter } from '../../functions/core/intake/types.js';
import type { Run } from '../../functions/core/runs/types.js';
import type { ToolDeps } from '../../functions/core/steps/hooks.js';
import { memoryCore, say, use } from '../support/agents.js';
import { newRun } from '../support/memory.js';

// The handlers read these when their modules load; the test setup silences logs otherwise.
process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
process.env.POWERTOOLS_METRICS_DISABLED = 'false';
delete process.env.POWERTOOLS_DEV;

type Core = Awaited<ReturnType<typeof memoryCore>>;
const shared = vi.hoisted(() => ({ core: undefined as unknown as Core }));

// Each handler wires itself when it loads; here the wiring is the in-memory core.
vi.mock('../../functions/wiring/wire.js', () => ({
  wire: (_source: unknown, parts: { model?: ModelProvider | ((env: unknown) => ModelProvider) } = {}) => ({
    ...shared.core.deps,
    sessions: { acquire: async (_session: string, runId: string) => runId, release: async () => undefined },
    env: { STEPWISE_ORCHESTRATOR_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:Orchestrator' },
    model: typeof parts.model === 'function' ? parts.model({}) : shared.core.model,
    traces: { tracer: { enabled: false, captureContent: false, emit() {}, flush: async () => undefined }, provider: 'anthropic' },
  }),
  externalConfig: () => ({ mcpServers: [], lambdaTools: [] }),
}));
vi.mock('../../functions/wiring/model.js', () => ({ modelWiring: () => () => shared.core.model }));
vi.mock('../../functions/wiring/workspaces.js', () => ({
  scopedWorkspaces: (): ToolDeps['workspaceFor'] => (runId) => shared.core.deps.workspaceFor(runId),
  // No run of these tests has memory.
  scopedMemories: () => () => {
    throw new Error('These tests give no run memory.');
  },
}));
vi.mock('../../functions/wiring/intake.js', () => ({
  intakeWiring: (_wiring: unknown, _sfn: unknown, hooks: { onCreated?: (run: Run) => void } = {}) => {
    const starter: RunStarter = { start: async () => undefined, stop: async () => undefined, announceCancelled: async () => undefined };
    return { runs: shared.core.runs, starter, newId: () => 'run-evt', ...(hooks.onCreated ? { onCreated: hooks.onCreated } : {}) };
  },
  deadLettersFrom: () => ({ send: async () => undefined }),
}));

type Line = Record<string, unknown>;
interface Emf {
  _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] };
}

let written: string[] = [];
/** Runs `work` and returns the JSON lines it wrote to stdout and stderr. */
async function linesOf(work: () => Promise<unknown>): Promise<Line[]> {
  written = [];
  await work().catch(() => undefined);
  return written
    .join('')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Line);
}
const isMetrics = (line: Line) => '_aws' in line;
/** The metric line's namespace, dimension names and metric values. */
function metricsOf(lines: Line[]) {
  const emf = lines.filter(isMetrics);
  expect(emf).toHaveLength(1);
  const line = emf[0] as Line & Emf;
  const [directive] = line._aws.CloudWatchMetrics;
  return {
    namespace: directive?.Namespace,
    dimensions: directive?.Dimensions,
    values: Object.fromEntries((directive?.Metrics ?? []).map((m) => [m.Name, line[m.Name]])),
    line,
  };
}

let inference: (event: unknown) => Promise<{ seq: number }>;
let tool: (event: unknown) => Promise<unknown>;
let intake: (event: unknown) => Promise<unknown>;
let executionEnded: (event: unknown) => Promise<unknown>;

beforeAll(async () => {
  shared.core = await memoryCore('What is 6 times 7?');
  // The tests here never reach a segment's end, so every step answers with its message's seq.
  inference = (await import('../../functions/handlers/inference.js')).handler as typeof inference;
  tool = (await import('../../functions/handlers/tool.js')).handler;
  intake = (await import('../../functions/handlers/run-requested.js')).handler;
  executionEnded = (await import('../../functions/handlers/execution-ended.js')).handler;
});

beforeEach(() => {
  const capture = (chunk: string | Uint8Array) => {
    written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
});
afterEach(() => vi.restoreAllMocks());

describe('the inference and tool handlers', () => {
  let seq = 0;

  it('put runId, agent and iteration on every line of an inference step, and count its iteration and tokens', async () => {
    shared.core.model.addTurn({
      ...use(['toolu_1', 'calculator', { operation: 'multiply', a: 6, b: 7 }], ['toolu_2', 'calculator', { operation: 'divide', a: 1, b: 0 }]),
      usage: { inputTokens: 120, outputTokens: 30, cacheReadInputTokens: 100, cacheCreationInputTokens: 7 },
    });
    const lines = await linesOf(async () => {
      seq = (await inference({ runId: 'run-1', agent: 'single', iteration: 0, model: '' })).seq;
    });

    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(line).toMatchObject({ runId: 'run-1', agent: 'single' });
    for (const line of lines.filter((l) => !isMetrics(l))) {
      expect(line).toMatchObject({ service: 'stepwise', iteration: 0, message: 'Inference step finished', stopReason: 'tool_use' });
    }
    const metrics = metricsOf(lines);
    expect(metrics.namespace).toBe('Stepwise');
    expect(metrics.dimensions).toEqual([['service', 'agent']]);
    expect(metrics.values).toEqual({
      Iterations: 1,
      InputTokens: 120,
      OutputTokens: 30,
      CacheReadInputTokens: 100,
      CacheCreationInputTokens: 7,
    });
    // The run's ids ride as metadata, never as dimensions.
    expect(metrics.line).toMatchObject({ runId: 'run-1', iteration: '0' });
  });

  it('counts no tokens when a retried step returns its stored answer', async () => {
    const lines = await linesOf(() => inference({ runId: 'run-1', agent: 'single', iteration: 0, model: '' }));
    expect(metricsOf(lines).values).toEqual({ Iterations: 1 });
  });

  it('put runId, agent, iteration, toolUseId and the tool on every line of a tool step, and count the call', async () => {
    const event = { runId: 'run-1', agent: 'single', seq, toolUseId: 'toolu_1', iteration: 0, name: 'calculator', needsApproval: false };
    const lines = await linesOf(() => tool(event));

    const keys = { runId: 'run-1', agent: 'single', toolUseId: 'toolu_1' };
    for (const line of lines) expect(line).toMatchObject(keys);
    for (const line of lines.filter((l) => !isMetrics(l))) {
      expect(line).toMatchObject({ ...keys, iteration: 0, tool: 'calculator', message: 'Tool step finished', isError: false });
    }
    const metrics = metricsOf(lines);
    expect(metrics.dimensions).toEqual([['service', 'agent', 'tool']]);
    expect(metrics.line).toMatchObject({ agent: 'single', tool: 'calculator' });
    expect(metrics.values).toEqual({ ToolCalls: 1, ToolErrors: 0 });
  });

  it('counts a tool error', async () => {
    const event = { runId: 'run-1', agent: 'single', seq, toolUseId: 'toolu_2', iteration: 0, name: 'calculator', needsApproval: false };
    const lines = await linesOf(() => tool(event));
    expect(metricsOf(lines).values).toEqual({ ToolCalls: 1, ToolErrors: 1 });
    expect(lines.find((l) => !isMetrics(l))).toMatchObject({ toolUseId: 'toolu_2', isError: true });
  });

  it('files a tool name the agent does not have under "other"', async () => {
    shared.core.model.addTurn(use(['toolu_3', 'rm_rf', { path: '/' }]));
    const step = await inference({ runId: 'run-1', agent: 'single', iteration: 1, model: '' });
    const lines = await linesOf(() =>
      tool({ runId: 'run-1', agent: 'single', seq: step.seq, toolUseId: 'toolu_3', iteration: 1, name: 'rm_rf', needsApproval: false }),
    );
    const metrics = metricsOf(lines);
    expect(metrics.line.tool).toBe('other');
    expect(metrics.values).toEqual({ ToolCalls: 1, ToolErrors: 1 });
    // The log line names it as it was called.
    expect(lines.find((l) => !isMetrics(l))).toMatchObject({ tool: 'rm_rf' });
  });

  it('clears the keys between invocations, and logs a failure with the keys of its own step', async () => {
    const lines = await linesOf(() => inference({ runId: 'run-none', agent: 'coder', iteration: 4 }));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'ERROR', message: 'Invocation failed', runId: 'run-none', agent: 'coder', iteration: 4 });
    expect(lines[0]).not.toHaveProperty('toolUseId');
    expect(lines[0]).not.toHaveProperty('tool');
    // A named error by its name and message: a stack trace of an expected failure helps nobody.
    expect(lines[0]?.error).toEqual({ name: expect.any(String), message: expect.any(String) });
  });

  it('logs an unexpected error whole, with its stack', async () => {
    shared.core.model.addTurn(() => {
      throw new TypeError('a bug');
    });
    await shared.core.runs.create(newRun('run-bug', 'Fail.'));
    const lines = await linesOf(() => inference({ runId: 'run-bug', agent: 'single', iteration: 0, model: '' }));
    expect(lines[0]).toMatchObject({ level: 'ERROR', message: 'Invocation failed', error: { name: 'TypeError', message: 'a bug', stack: expect.stringContaining('TypeError: a bug') } });
  });

  it("writes each overlapping tool step's own metric line, without Powertools' duplicate-dimension warning", async () => {
    // Parallel calls of one turn, as the local runtime runs them: in one process, side by side.
    const step = await inference({ runId: 'run-1', agent: 'single', iteration: 0, model: '' });
    const calls = [
      { toolUseId: 'toolu_1', name: 'calculator' },
      { toolUseId: 'toolu_2', name: 'write_file' },
    ].map((call) => ({ runId: 'run-1', agent: 'single', seq: step.seq, iteration: 0, needsApproval: false, ...call }));
    written = [];
    await Promise.all(calls.map((event) => tool(event)));
    const output = written.join('');

    expect(output).not.toContain('has already been added');
    const emf = output
      .split('\n')
      .filter((l) => l.includes('"_aws"'))
      .map((l) => JSON.parse(l) as Line);
    expect(emf.map((line) => ({ toolUseId: line.toolUseId, tool: line.tool, agent: line.agent }))).toEqual([
      { toolUseId: 'toolu_1', tool: 'calculator', agent: 'single' },
      { toolUseId: 'toolu_2', tool: 'write_file', agent: 'single' },
    ]);
  });

  it('carries no key of an earlier tool call into a later inference step', async () => {
    shared.core.model.addTurn(say('42'));
    const lines = await linesOf(() => inference({ runId: 'run-1', agent: 'single', iteration: 2, model: '' }));
    for (const line of lines) expect(line).not.toHaveProperty('toolUseId');
    expect(lines.find((l) => !isMetrics(l))).toMatchObject({ iteration: 2, stopReason: 'end_turn' });
  });
});

describe('the intake handler', () => {
  it('counts a started run by mode and logs its id', async () => {
    const event = { id: 'e1', 'detail-type': 'Stepwise Run Requested', source: 'test', detail: { goal: 'Say hi.', mode: 'single' } };
    const lines = await linesOf(() => intake(event));
    const metrics = metricsOf(lines);
    expect(metrics.dimensions).toEqual([['service', 'mode']]);
    expect(metrics.values).toEqual({ RunsStarted: 1 });
    expect(lines.find((l) => !isMetrics(l))).toMatchObject({ message: 'Run request accepted', runId: 'evt-e1' });
  });

  it('counts no run for a redelivered event: the run was created once', async () => {
    const event = { id: 'e1', 'detail-type': 'Stepwise Run Requested', source: 'test', detail: { goal: 'Say hi.', mode: 'single' } };
    const lines = await linesOf(() => intake(event));
    expect(lines.filter(isMetrics)).toEqual([]);
    expect(lines.find((l) => !isMetrics(l))).toMatchObject({ message: 'Run request accepted' });
  });

  it('starts and counts nothing for an invalid event, and says why', async () => {
    const lines = await linesOf(() => intake({ 'detail-type': 'Stepwise Run Requested', detail: { goal: '' } }));
    expect(lines.filter(isMetrics)).toEqual([]);
    expect(lines).toEqual([expect.objectContaining({ level: 'WARN', message: 'Run request refused; sent to the dead-letter queue' })]);
  });
});

describe('the execution-ended handler', () => {
  const aborted = {
    'detail-type': 'Step Functions Execution Status Change',
    source: 'aws.states',
    detail: {
      executionArn: 'arn:aws:states:us-east-1:123456789012:execution:Orchestrator:run-stopped',
      stateMachineArn: 'arn:aws:states:us-east-1:123456789012:stateMachine:Orchestrator',
      name: 'run-stopped',
      status: 'ABORTED',
      input: JSON.stringify({ runId: 'run-stopped' }),
    },
  };

  it('counts a run it marked failed by the execution\'s status, and logs the run id', async () => {
    await shared.core.runs.create(newRun('run-stopped', 'Go.'));
    const lines = await linesOf(() => executionEnded(aborted));
    const metrics = metricsOf(lines);
    expect(metrics.dimensions).toEqual([['service', 'status']]);
    expect(metrics.line).toMatchObject({ status: 'ABORTED' });
    expect(metrics.values).toEqual({ RunsInterrupted: 1 });
    expect(lines.find((l) => !isMetrics(l))).toMatchObject({ level: 'WARN', runId: 'run-stopped', error: { code: 'ExecutionAborted' } });
  });

  it('counts nothing when the same event comes again', async () => {
    const lines = await linesOf(() => executionEnded(aborted));
    expect(lines.filter(isMetrics)).toEqual([]);
    expect(lines).toEqual([expect.objectContaining({ level: 'INFO', runId: 'run-stopped', reason: 'The run is failed already.' })]);
  });
});
