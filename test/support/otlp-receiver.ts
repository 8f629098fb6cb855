/**
 * An in-process OTLP/HTTP traces receiver for tests: it decodes `http/json` requests into spans
 * (ids, parents, names, attributes, status, events) and keeps `http/protobuf` requests as they
 * came (their content type and bytes).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

/** A span as the receiver decoded it. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
  events: { name: string; attributes: Record<string, unknown> }[];
  service: string;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values: OtlpAttribute['value'][] } };
}

function valueOf(value: OtlpAttribute['value']): unknown {
  if (value.arrayValue) return value.arrayValue.values.map(valueOf);
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.doubleValue ?? value.boolValue;
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** The `http/protobuf` requests: content type and body size. */
  binary: { contentType: string; bytes: number }[];
  /** Headers of every request. */
  headers: Record<string, string | string[] | undefined>[];
  close(): Promise<void>;
}

/** Starts a receiver on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const binary: OtlpReceiver['binary'] = [];
  const headers: OtlpReceiver['headers'] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = String(request.headers['content-type'] ?? '');
      headers.push(request.headers);
      if (contentType.includes('json')) {
        const decoded = JSON.parse(body.toString('utf8')) as {
          resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: Record<string, unknown>[] }[] }[];
        };
        for (const resource of decoded.resourceSpans) {
          const service = String(attributesOf(resource.resource.attributes)['service.name']);
          for (const scope of resource.scopeSpans) {
            for (const span of scope.spans) {
              const parent = span.parentSpanId as string | undefined;
              spans.push({
                traceId: span.traceId as string,
                spanId: span.spanId as string,
                ...(parent ? { parentSpanId: parent } : {}),
                name: span.name as string,
                kind: span.kind as number,
                startMs: Number(BigInt(span.startTimeUnixNano as string) / 1_000_000n),
                endMs: Number(BigInt(span.endTimeUnixNano as string) / 1_000_000n),
                attributes: attributesOf(span.attributes as OtlpAttribute[]),
                status: (span.status ?? { code: 0 }) as ReceivedSpan['status'],
                events: ((span.events ?? []) as { name: string; attributes: OtlpAttribute[] }[]).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
                service,
              });
            }
          }
        }
      } else {
        binary.push({ contentType, bytes: body.length });
      }
      response.writeHead(200, { 'content-type': contentType.includes('json') ? 'application/json' : 'application/x-protobuf' });
      response.end(contentType.includes('json') ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    binary,
    headers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A receiver for one test file, started before the stack that `env` configures (register it
 * before `useLocalStack(env)`): it sets the standard variables on `env` as the stack reads them.
 */
export function useOtlpReceiver(env: Record<string, string>, protocol: 'http/json' | 'http/protobuf' = 'http/json'): { receiver: OtlpReceiver } {
  const holder = {} as { receiver: OtlpReceiver };
  beforeAll(async () => {
    holder.receiver = await startOtlpReceiver();
    Object.assign(env, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: holder.receiver.url, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol });
  });
  afterAll(async () => {
    // The stack copies its environment into the process: another file in this worker must not trace.
    for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) delete process.env[name];
    await holder.receiver?.close();
  });
  return holder;
}
