/**
 * The OpenTelemetry adapter of the core's `Tracer` port (docs/traces.md): the core's finished span
 * records become SDK spans with exactly their ids, exported over OTLP/HTTP when the handler
 * flushes. The SDK and the exporter are imported at the first flush that has spans, so a function
 * that never traces never loads them.
 */
import type { SpanRecord, Tracer } from '../../core/traces/types.js';

/** Where and how spans are sent. */
export interface OtlpSettings {
  /** The traces URL (`…/v1/traces`). */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  headers: Record<string, string>;
  /** `OTEL_SERVICE_NAME`, the `service.name` of every span. */
  serviceName: string;
  captureContent: boolean;
  /** Signs each request with SigV4 for this service and region (the X-Ray OTLP endpoint). */
  sigv4?: { service: string; region: string };
  /** Where a failed export is reported (never thrown). */
  log?: (message: string, detail: Record<string, unknown>) => void;
}

/** The SDK's parts, once loaded. */
interface Sdk {
  record(span: SpanRecord): void;
  flush(timeoutMs: number): Promise<void>;
}

/** The longest a flush waits for the collector by default: a step never waits long for traces. */
export const defaultFlushTimeoutMs = 2_000;

/** A tracer that exports the core's spans over OTLP/HTTP. */
export class OtlpTracer implements Tracer {
  readonly enabled = true;
  readonly captureContent: boolean;
  private pending: SpanRecord[] = [];
  private sdk: Promise<Sdk> | undefined;

  constructor(private readonly settings: OtlpSettings) {
    this.captureContent = settings.captureContent;
  }

  emit(span: SpanRecord): void {
    this.pending.push(span);
  }

  async flush(timeoutMs = defaultFlushTimeoutMs): Promise<void> {
    if (!this.pending.length) return;
    const spans = this.pending.splice(0);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the collector did not answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.send(spans, timeoutMs), timeout]);
    } catch (error) {
      // Traces never fail a step: the spans are dropped and the failure logged.
      this.settings.log?.('Traces not exported', { spans: spans.length, error: error instanceof Error ? error.message : String(error) });
    } finally {
      clearTimeout(timer);
    }
  }

  private async send(spans: SpanRecord[], timeoutMs: number): Promise<void> {
    this.sdk ??= loadSdk(this.settings);
    const sdk = await this.sdk.catch((error: unknown) => {
      this.sdk = undefined;
      throw error;
    });
    for (const span of spans) sdk.record(span);
    await sdk.flush(timeoutMs);
  }
}

/** Loads the SDK and the exporter of the configured protocol, and makes a provider whose ids are the records'. */
async function loadSdk(settings: OtlpSettings): Promise<Sdk> {
  const [api, base, resources, exporter] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    exporterFor(settings),
  ]);
  // The ids of the span being started: set just before each (synchronous) startSpan.
  const next = { traceId: '', spanId: '' };
  const provider = new base.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': settings.serviceName }),
    idGenerator: { generateTraceId: () => next.traceId, generateSpanId: () => next.spanId },
    sampler: new base.AlwaysOnSampler(),
    // Attribute values are bounded by the core already; the SDK's defaults would cut nothing more.
    spanProcessors: [new base.BatchSpanProcessor(exporter, { scheduledDelayMillis: 60_000, maxExportBatchSize: 512, maxQueueSize: 4096 })],
  });
  const tracer = provider.getTracer('stepwise');
  return {
    record(span) {
      const parent = span.parentSpanId
        ? api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: span.traceId, spanId: span.parentSpanId, traceFlags: api.TraceFlags.SAMPLED, isRemote: true })
        : api.ROOT_CONTEXT;
      next.traceId = span.traceId;
      next.spanId = span.spanId;
      const kind = span.kind === 'client' ? api.SpanKind.CLIENT : api.SpanKind.INTERNAL;
      const started = tracer.startSpan(span.name, { kind, startTime: span.startTime, attributes: span.attributes, root: !span.parentSpanId }, parent);
      if (span.error) {
        started.recordException({ name: span.error.type, message: span.error.message }, span.endTime);
        started.setStatus({ code: api.SpanStatusCode.ERROR, message: span.error.message });
      }
      started.end(span.endTime);
    },
    async flush(timeoutMs) {
      await provider.forceFlush({ timeoutMillis: timeoutMs });
    },
  };
}

/** The OTLP exporter of the protocol; SigV4-signed requests (X-Ray) through the adapter's own small exporter. */
async function exporterFor(settings: OtlpSettings) {
  const options = { url: settings.url, headers: settings.headers };
  if (settings.sigv4) {
    const { SigV4Exporter } = await import('./sigv4-exporter.js');
    return new SigV4Exporter({ ...options, protocol: settings.protocol, ...settings.sigv4 });
  }
  if (settings.protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options);
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(options);
}
