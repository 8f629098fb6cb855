/**
 * Traces of runs (docs/traces.md): span ids from step keys, the GenAI attributes, one span per
 * model call or tool call made (none for a retried step answered from the store), content only
 * with the capture setting, and the OTLP settings the standard variables give.
 */
import { describe, expect, it } from 'vitest';
import { inferenceStep } from '../../functions/core/steps/inference.js';
import { toolStep } from '../../functions/core/steps/tool.js';
import { createRun } from '../../functions/core/intake/create.js';
import { intakeEvent } from '../../functions/core/intake/events.js';
import { agentSpanId, chatSpanId, newRunTrace, parseTraceparent, toolSpanId, traceparentOf } from '../../functions/core/traces/context.js';
import { endedRunSpans, endedRunOf, traceEndedRun } from '../../functions/core/traces/run-ended.js';
import { noTracer, type RunTrace, type SpanRecord, type Tracer } from '../../functions/core/traces/types.js';
import { ModelOverloaded } from '../../functions/core/model/types.js';
import { otlpHeaders, otlpSettings } from '../../functions/wiring/traces.js';
import { memoryCore, say, use } from '../support/agents.js';
import { MemoryRunStore } from '../support/memory.js';
import { RecordingStarter } from '../support/api.js';

/** A tracer that keeps what it is given. */
function recordingTracer(captureContent = false): Tracer & { spans: SpanRecord[] } {
  const spans: SpanRecord[] = [];
  return { enabled: true, captureContent, spans, emit: (span) => void spans.push(span), flush: async () => undefined };
}

const trace: RunTrace = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true };

/** A core whose run is traced, with a clock that moves 5 ms at each reading. */
async function tracedCore(captureContent = false) {
  const core = await memoryCore();
  const run = await core.runs.get('run-1');
  await core.runs.create({ ...run!, runId: 'run-t', trace });
  let t = Date.parse('2026-01-01T00:00:00.000Z');
  const tracer = recordingTracer(captureContent);
  const deps = { ...core.deps, traces: { tracer, provider: 'anthropic' }, clock: () => new Date((t += 5)) };
  return { ...core, deps, tracer };
}

describe('trace context', () => {
  it('reads a W3C traceparent, and ignores a malformed, all-zero or version ff one', () => {
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual({ traceId: trace.traceId, spanId: trace.spanId, sampled: true });
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')?.sampled).toBe(false);
    for (const bad of [undefined, '', 'nonsense', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, `00-${trace.traceId}-${'0'.repeat(16)}-01`, `ff-${trace.traceId}-00f067aa0ba902b7-01`]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
  });

  it("makes a run's trace a child of the caller's span, or a new trace of its own", () => {
    const child = newRunTrace('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(child).toMatchObject({ traceId: trace.traceId, parentSpanId: trace.spanId, sampled: true });
    expect(child.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(child.spanId).not.toBe(trace.spanId);
    const own = newRunTrace(undefined);
    expect(own.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(own).not.toHaveProperty('parentSpanId');
    expect(traceparentOf(own, own.spanId)).toBe(`00-${own.traceId}-${own.spanId}-01`);
  });

  it('derives the same span id from the same step keys, and another from any other', () => {
    expect(chatSpanId(trace, 'r', 'coder', 3)).toBe(chatSpanId(trace, 'r', 'coder', 3));
    const ids = [chatSpanId(trace, 'r', 'coder', 3), chatSpanId(trace, 'r', 'coder', 4), chatSpanId(trace, 'r', 'architect', 3), chatSpanId(trace, 'r', 'coder', 3, 1), toolSpanId(trace, 'r', 't1'), agentSpanId(trace, 'r', 'coder')];
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('intake', () => {
  const caller = { principal: 'iss#alice', scopes: [] };
  const body = { goal: 'Add 2 and 3.', mode: 'single' as const, maxIterations: 25 };
  const deps = (tracing: boolean) => ({ runs: new MemoryRunStore(), starter: new RecordingStarter(), newId: () => 'run-1', ...(tracing ? { tracing } : {}) });

  it("records the run's trace, a child of the caller's traceparent, when the deployment traces", async () => {
    const traced = deps(true);
    await createRun(body, traced, { caller, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
    expect((await traced.runs.get('run-1'))?.trace).toMatchObject({ traceId: trace.traceId, parentSpanId: trace.spanId, sampled: true });
    const untraced = deps(false);
    await createRun(body, untraced, { caller, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
    expect((await untraced.runs.get('run-1'))?.trace).toBeUndefined();
  });

  it('honours a traceparent in a run-requested event', async () => {
    const traced = deps(true);
    const event = { id: 'e1', 'detail-type': 'Stepwise Run Requested', source: 'app', account: '111122223333', detail: { ...body, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00' } };
    expect(await intakeEvent(event, { ...traced, deadLetters: { send: async () => undefined } })).toEqual({ accepted: true, runId: 'evt-e1' });
    expect((await traced.runs.get('evt-e1'))?.trace).toMatchObject({ traceId: trace.traceId, parentSpanId: trace.spanId, sampled: false });
  });
});

describe('step spans', () => {
  it('describes a model call as a chat span under its agent, with the GenAI attributes and no content by default', async () => {
    const core = await tracedCore();
    core.model.addTurn(use(['toolu_1', 'calculator', { operation: 'add', a: 2, b: 3 }]));
    await inferenceStep({ runId: 'run-t', agent: 'single', iteration: 0 }, core.deps);
    expect(core.tracer.spans).toHaveLength(1);
    const [span] = core.tracer.spans;
    expect(span).toEqual({
      name: 'chat claude-test',
      traceId: trace.traceId,
      spanId: chatSpanId(trace, 'run-t', 'single', 0),
      parentSpanId: agentSpanId(trace, 'run-t', 'single'),
      kind: 'client',
      startTime: expect.any(Date),
      endTime: expect.any(Date),
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.request.model': 'claude-test',
        'gen_ai.request.max_tokens': 1024,
        'gen_ai.conversation.id': 'run/run-t/single',
        'gen_ai.agent.name': 'single',
        'stepwise.run.id': 'run-t',
        'gen_ai.response.model': expect.any(String),
        'gen_ai.response.finish_reasons': ['tool_use'],
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
        'gen_ai.usage.cache_read.input_tokens': expect.any(Number),
        'gen_ai.usage.cache_creation.input_tokens': expect.any(Number),
      },
    });
    expect(span!.endTime.getTime()).toBeGreaterThan(span!.startTime.getTime());
  });

  it('describes a retried step answered from the store, and a retried tool call, not at all: no usage twice', async () => {
    const core = await tracedCore();
    core.model.addTurn(use(['toolu_1', 'calculator', { operation: 'add', a: 2, b: 3 }]));
    const input = { runId: 'run-t', agent: 'single' as const, iteration: 0 };
    const first = await inferenceStep(input, core.deps);
    await inferenceStep(input, core.deps);
    const call = { runId: 'run-t', agent: 'single' as const, seq: first.seq, toolUseId: 'toolu_1' };
    await toolStep(call, core.deps);
    await toolStep(call, core.deps);
    expect(core.tracer.spans.map((s) => s.name)).toEqual(['chat claude-test', 'execute_tool calculator']);
  });

  it('describes a tool call under its agent, and a tool error as the span’s error', async () => {
    const core = await tracedCore();
    core.model.addTurn(use(['toolu_1', 'calculator', { operation: 'divide', a: 1, b: 0 }]));
    const step = await inferenceStep({ runId: 'run-t', agent: 'single', iteration: 0 }, core.deps);
    await toolStep({ runId: 'run-t', agent: 'single', seq: step.seq, toolUseId: 'toolu_1' }, core.deps);
    const span = core.tracer.spans[1];
    expect(span).toMatchObject({
      name: 'execute_tool calculator',
      spanId: toolSpanId(trace, 'run-t', 'toolu_1'),
      parentSpanId: agentSpanId(trace, 'run-t', 'single'),
      attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'calculator', 'gen_ai.tool.call.id': 'toolu_1', 'gen_ai.tool.type': 'function', 'error.type': 'ToolError', 'stepwise.run.id': 'run-t' },
      error: { type: 'ToolError', message: expect.stringMatching(/zero/i) },
    });
    expect(span?.attributes).not.toHaveProperty('gen_ai.tool.call.arguments');
  });

  it('records a failed model call on its span, and rethrows', async () => {
    const core = await tracedCore();
    const failing = { ...core.deps, model: { generate: () => Promise.reject(new ModelOverloaded('Overloaded.')) } };
    await expect(inferenceStep({ runId: 'run-t', agent: 'single', iteration: 0 }, failing)).rejects.toThrow('Overloaded.');
    expect(core.tracer.spans).toHaveLength(1);
    expect(core.tracer.spans[0]).toMatchObject({ error: { type: 'ModelOverloaded', message: 'Overloaded.' }, attributes: { 'error.type': 'ModelOverloaded' } });
    expect(core.tracer.spans[0]?.attributes).not.toHaveProperty('gen_ai.usage.input_tokens');
  });

  it('adds the messages and the tool input and output only with the capture setting', async () => {
    const core = await tracedCore(true);
    core.model.addTurn(use(['toolu_1', 'calculator', { operation: 'add', a: 2, b: 3 }]));
    const step = await inferenceStep({ runId: 'run-t', agent: 'single', iteration: 0 }, core.deps);
    await toolStep({ runId: 'run-t', agent: 'single', seq: step.seq, toolUseId: 'toolu_1' }, core.deps);
    const [chat, tool] = core.tracer.spans;
    expect(String(chat?.attributes['gen_ai.input.messages'])).toContain('Add 2 and 3.');
    expect(JSON.parse(String(chat?.attributes['gen_ai.output.messages']))).toEqual([{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'calculator', input: { operation: 'add', a: 2, b: 3 } }] }]);
    expect(tool?.attributes).toMatchObject({ 'gen_ai.tool.call.arguments': '{"operation":"add","a":2,"b":3}', 'gen_ai.tool.call.result': '"5"' });
  });

  it('describes nothing without a tracer, for an untraced run, or for an unsampled one', async () => {
    const core = await tracedCore();
    core.model.addTurn(say('Hi.'), say('Hi.'), say('Hi.'));
    await inferenceStep({ runId: 'run-t', agent: 'single', iteration: 0 }, { ...core.deps, traces: { tracer: noTracer, provider: 'anthropic' } });
    await inferenceStep({ runId: 'run-1', agent: 'single', iteration: 0 }, core.deps);
    const run = await core.runs.get('run-t');
    await core.runs.create({ ...run!, runId: 'run-u', trace: { ...trace, sampled: false } });
    await inferenceStep({ runId: 'run-u', agent: 'single', iteration: 0 }, core.deps);
    expect(core.tracer.spans).toEqual([]);
  });
});

describe('the spans of an ended run', () => {
  it("describes the run's own span and one per agent that answered, from the stored answers' timings", async () => {
    const core = await tracedCore();
    core.model.addTurn(say('Five.'));
    await inferenceStep({ runId: 'run-t', agent: 'single', iteration: 0 }, core.deps);
    await core.runs.finish('run-t', { status: 'succeeded', phase: 'complete' });
    const tracer = recordingTracer();
    expect(await traceEndedRun('run-t', { runs: core.runs, conversations: core.conversations, traces: { tracer, provider: 'anthropic' } })).toBe(2);
    const [agent, run] = tracer.spans;
    const chat = core.tracer.spans[0]!;
    expect(agent).toMatchObject({ name: 'invoke_agent single', spanId: agentSpanId(trace, 'run-t', 'single'), parentSpanId: trace.spanId, attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'single', 'gen_ai.conversation.id': 'run/run-t/single' } });
    // The agent's span holds its model call.
    expect(agent!.startTime.getTime()).toBeLessThanOrEqual(chat.startTime.getTime());
    expect(agent!.endTime.getTime()).toBeGreaterThanOrEqual(chat.endTime.getTime());
    expect(run).toMatchObject({ name: 'invoke_workflow single', spanId: trace.spanId, attributes: { 'gen_ai.operation.name': 'invoke_workflow', 'stepwise.run.status': 'succeeded', 'stepwise.run.id': 'run-t' } });
    expect(run).not.toHaveProperty('parentSpanId');
  });

  it('marks the failed agent and the run with the run’s error, and describes nothing while the run runs', async () => {
    const core = await tracedCore();
    core.model.addTurn(say('Five.'));
    await inferenceStep({ runId: 'run-t', agent: 'single', iteration: 0 }, core.deps);
    const tracer = recordingTracer();
    const deps = { runs: core.runs, conversations: core.conversations, traces: { tracer, provider: 'anthropic' } };
    expect(await traceEndedRun('run-t', deps)).toBe(0);
    await core.runs.finish('run-t', { status: 'failed', phase: 'failed', error: { code: 'MaxIterationsExceeded', message: 'Too many.', agent: 'single' } });
    const spans = await endedRunSpans((await core.runs.get('run-t'))!, deps);
    expect(spans.map((s) => [s.name, s.error])).toEqual([
      ['invoke_agent single', { type: 'MaxIterationsExceeded', message: 'Too many.' }],
      ['invoke_workflow single', { type: 'MaxIterationsExceeded', message: 'Too many.' }],
    ]);
  });

  it('reads the run a completion event names, and no other event', () => {
    expect(endedRunOf({ source: 'stepwise', 'detail-type': 'Stepwise Run Failed', detail: { runId: 'r1' } })).toBe('r1');
    expect(endedRunOf({ source: 'stepwise', 'detail-type': 'Stepwise Run Requested', detail: { runId: 'r1' } })).toBeUndefined();
    expect(endedRunOf({ source: 'aws.states', 'detail-type': 'Stepwise Run Failed', detail: { runId: 'r1' } })).toBeUndefined();
  });
});

describe('OTLP settings from the standard variables', () => {
  it('sends nothing without an endpoint, or with the SDK disabled', () => {
    expect(otlpSettings({})).toBeUndefined();
    expect(otlpSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });

  it('adds /v1/traces to the general endpoint, takes the traces endpoint as given, and the traces protocol and headers first', () => {
    expect(otlpSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toMatchObject({ url: 'http://collector:4318/v1/traces', protocol: 'http/protobuf', headers: {}, serviceName: 'stepwise', captureContent: false });
    expect(
      otlpSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_HEADERS: 'a=1',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'api-key=s%20e,x-team=core',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      }),
    ).toMatchObject({ url: 'https://traces.example/otlp', protocol: 'http/json', headers: { 'api-key': 's e', 'x-team': 'core' }, captureContent: true });
    expect(otlpHeaders('broken,k=v')).toEqual({ k: 'v' });
  });

  it('refuses a protocol it cannot send, naming the variable', () => {
    expect(() => otlpSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/protobuf or http\/json/);
  });
});
