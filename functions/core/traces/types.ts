/**
 * Traces of runs (docs/traces.md): one OpenTelemetry trace per run, whatever Lambda each step ran
 * in. The core describes finished spans as plain records with ids it derives from the step keys;
 * an adapter exports them (`adapters/otel/`), and without one nothing is made at all.
 */
import * as z from 'zod';

const hex = (length: number) => z.string().regex(new RegExp(`^[0-9a-f]{${length}}$`));

/**
 * A run's place in a trace, fixed at intake and kept on the run record: every step of the run
 * reads it there, so no step guesses a trace id. `spanId` is the run's own span (the root of
 * its spans); `parentSpanId` the caller's span (`traceparent`), when it sent one.
 */
export const RunTrace = z.object({
  traceId: hex(32),
  spanId: hex(16),
  parentSpanId: hex(16).optional(),
  /** The caller's sampling decision (W3C `sampled` flag); a run started without a caller's context is sampled. */
  sampled: z.boolean(),
});

export type RunTrace = z.infer<typeof RunTrace>;

/** A span attribute's value, as OpenTelemetry takes it. */
export type AttributeValue = string | number | boolean | string[];

/** A finished span, described by the core; the exporter makes it an OpenTelemetry span with exactly these ids. */
export interface SpanRecord {
  name: string;
  traceId: string;
  spanId: string;
  /** Absent for a root span. */
  parentSpanId?: string;
  /** `client` for a call out of the process (the model), `internal` otherwise. */
  kind: 'internal' | 'client';
  startTime: Date;
  endTime: Date;
  attributes: Record<string, AttributeValue>;
  /** Set when the span's work failed: the span's status is ERROR with an exception event. */
  error?: { type: string; message: string };
}

/** Where finished spans go. */
export interface Tracer {
  /** Whether spans are exported at all: nothing is described when not. */
  readonly enabled: boolean;
  /** Whether message content may go into spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). */
  readonly captureContent: boolean;
  /** Takes a finished span; sent at the next flush. */
  emit(span: SpanRecord): void;
  /** Sends what was emitted, waiting at most `timeoutMs`; never throws (a collector that does not answer never fails a step). */
  flush(timeoutMs?: number): Promise<void>;
}

/** The tracer of a deployment without an endpoint: describes nothing, sends nothing. */
export const noTracer: Tracer = {
  enabled: false,
  captureContent: false,
  emit() {},
  async flush() {},
};

/** What the steps need to trace: the tracer and the provider's name as the GenAI conventions spell it. */
export interface TraceSettings {
  tracer: Tracer;
  /** `gen_ai.provider.name`: `anthropic`, `aws.bedrock`, or the scripted stand-in's name. */
  provider: string;
}
