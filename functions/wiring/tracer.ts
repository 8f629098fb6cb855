/**
 * The tracer of a function that sends spans (inference, tool, run-ended: docs/traces.md): the OTLP
 * adapter when an endpoint is set, else the no-op tracer. Only these functions import it, so only
 * their bundles carry the OpenTelemetry SDK (loaded at the first flush with spans).
 */
import { noTracer, type TraceSettings } from '../core/traces/types.js';
import { OtlpTracer } from '../adapters/otel/tracer.js';
import { otlpSettings, providerName } from './traces.js';
import type { Env } from './wire.js';

/** The function's tracer and the provider's name as the GenAI conventions spell it. */
export function otlpTraces(source: Record<string, string | undefined>, env: Pick<Env, 'STEPWISE_PROVIDER'>): TraceSettings {
  const settings = otlpSettings(source);
  return { tracer: settings ? new OtlpTracer(settings) : noTracer, provider: providerName(env.STEPWISE_PROVIDER) };
}
