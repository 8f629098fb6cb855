/**
 * The OTLP adapter on the wire (docs/traces.md): the core's span records reach an OTLP/HTTP
 * receiver with exactly their ids, parents, attributes and errors, as `http/json` or
 * `http/protobuf`; an unreachable collector never fails the flush.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OtlpTracer } from '../../functions/adapters/otel/tracer.js';
import type { SpanRecord } from '../../functions/core/traces/types.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(() => receiver.close());

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const root: SpanRecord = {
  name: 'invoke_workflow assistant',
  traceId,
  spanId: '1111111111111111',
  parentSpanId: '00f067aa0ba902b7',
  kind: 'internal',
  startTime: new Date('2026-01-01T00:00:00.000Z'),
  endTime: new Date('2026-01-01T00:00:02.000Z'),
  attributes: { 'gen_ai.operation.name': 'invoke_workflow', 'gen_ai.usage.input_tokens': 12 },
};
const chat: SpanRecord = {
  name: 'chat claude-test',
  traceId,
  spanId: '2222222222222222',
  parentSpanId: '1111111111111111',
  kind: 'client',
  startTime: new Date('2026-01-01T00:00:00.500Z'),
  endTime: new Date('2026-01-01T00:00:01.000Z'),
  attributes: { 'gen_ai.response.finish_reasons': ['end_turn'] },
  error: { type: 'ModelOverloaded', message: 'Overloaded.' },
};
const settings = { headers: { 'x-api-key': 'k1' }, serviceName: 'stepwise-test', captureContent: false };

describe('OtlpTracer', () => {
  it('sends the spans as http/json with their own ids, parents, times, attributes and errors, and the configured headers', async () => {
    const tracer = new OtlpTracer({ ...settings, url: receiver.url, protocol: 'http/json' });
    tracer.emit(root);
    tracer.emit(chat);
    expect(receiver.spans).toEqual([]);
    await tracer.flush();
    expect(receiver.spans.map(({ events, ...span }) => ({ ...span, events: events.map((e) => e.name) }))).toEqual([
      {
        traceId,
        spanId: '1111111111111111',
        parentSpanId: '00f067aa0ba902b7',
        name: 'invoke_workflow assistant',
        kind: 1,
        startMs: root.startTime.getTime(),
        endMs: root.endTime.getTime(),
        attributes: { 'gen_ai.operation.name': 'invoke_workflow', 'gen_ai.usage.input_tokens': 12 },
        status: { code: 0 },
        events: [],
        service: 'stepwise-test',
      },
      {
        traceId,
        spanId: '2222222222222222',
        parentSpanId: '1111111111111111',
        name: 'chat claude-test',
        kind: 3,
        startMs: chat.startTime.getTime(),
        endMs: chat.endTime.getTime(),
        attributes: { 'gen_ai.response.finish_reasons': ['end_turn'] },
        status: { code: 2, message: 'Overloaded.' },
        events: ['exception'],
        service: 'stepwise-test',
      },
    ]);
    expect(receiver.spans[1]?.events[0]?.attributes).toMatchObject({ 'exception.type': 'ModelOverloaded', 'exception.message': 'Overloaded.' });
    expect(receiver.headers.at(-1)).toMatchObject({ 'x-api-key': 'k1' });
  });

  it('sends http/protobuf as a protobuf body', async () => {
    const tracer = new OtlpTracer({ ...settings, url: receiver.url, protocol: 'http/protobuf' });
    tracer.emit(root);
    await tracer.flush();
    expect(receiver.binary).toEqual([{ contentType: 'application/x-protobuf', bytes: expect.any(Number) }]);
    expect(receiver.binary[0]?.bytes).toBeGreaterThan(100);
  });

  it('drops the spans and logs, without throwing, when the collector cannot be reached', async () => {
    const logged: string[] = [];
    const tracer = new OtlpTracer({ ...settings, url: 'http://127.0.0.1:9/v1/traces', protocol: 'http/json', log: (message) => void logged.push(message) });
    tracer.emit(root);
    await expect(tracer.flush(300)).resolves.toBeUndefined();
    expect(logged).toEqual(['Traces not exported']);
  });
});
