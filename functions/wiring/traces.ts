/**
 * Where traces go (docs/traces.md): the standard `OTEL_*` variables read and checked. Free of the
 * OpenTelemetry adapter, so a function that never sends spans (the API, the intake) knows whether
 * runs are traced without bundling the SDK; `tracer.ts` beside this file builds the tracer.
 */
import * as z from 'zod';
import type { OtlpSettings } from '../adapters/otel/tracer.js';

/** The standard OpenTelemetry variables Stepwise reads, and its own switch for SigV4 (the X-Ray OTLP endpoint). */
const TracesEnv = z.object({
  OTEL_SDK_DISABLED: z.enum(['true', 'false']).optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.enum(['http/protobuf', 'http/json'], { error: 'must be http/protobuf or http/json (Stepwise sends OTLP over HTTP)' }).optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/protobuf', 'http/json'], { error: 'must be http/protobuf or http/json (Stepwise sends OTLP over HTTP)' }).optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: z.string().optional(),
  OTEL_EXPORTER_OTLP_HEADERS: z.string().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('stepwise'),
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: z.string().optional(),
  /** `xray`: sign each export with SigV4 for X-Ray (the deployed default's endpoint takes only signed requests). */
  STEPWISE_OTLP_SIGV4: z.enum(['xray']).optional(),
  AWS_REGION: z.string().default('us-east-1'),
});

/** `key1=value1,key2=value2`, values URL-encoded (the OTLP exporter specification's format). */
export function otlpHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

/** The OTLP settings of an environment; undefined when no traces endpoint is set (or the SDK is disabled). */
export function otlpSettings(source: Record<string, string | undefined>): OtlpSettings | undefined {
  const parsed = TracesEnv.safeParse(source);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Stepwise is misconfigured: ${problems}`);
  }
  const env = parsed.data;
  if (env.OTEL_SDK_DISABLED === 'true') return undefined;
  // The traces endpoint is used as given; the general one is a base URL that `/v1/traces` is added to.
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT && `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`);
  if (!url) return undefined;
  return {
    url,
    protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    headers: otlpHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS),
    serviceName: env.OTEL_SERVICE_NAME,
    captureContent: env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.toLowerCase() === 'true',
    ...(env.STEPWISE_OTLP_SIGV4 ? { sigv4: { service: env.STEPWISE_OTLP_SIGV4, region: env.AWS_REGION } } : {}),
    log: (message, detail) => console.warn(JSON.stringify({ level: 'WARN', message, ...detail })),
  };
}

/** `gen_ai.provider.name` of a configured provider, as the GenAI conventions spell it. */
const providerNames: Record<string, string> = { anthropic: 'anthropic', bedrock: 'aws.bedrock', scripted: 'stepwise.scripted' };

/** `gen_ai.provider.name` of a configured provider. */
export function providerName(provider: string): string {
  return providerNames[provider] ?? provider;
}
