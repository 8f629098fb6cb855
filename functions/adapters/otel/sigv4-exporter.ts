/**
 * An OTLP/HTTP span exporter that signs each request with SigV4: the X-Ray OTLP endpoint
 * (`https://xray.<region>.amazonaws.com/v1/traces`) takes only signed requests, and the OTLP
 * exporters cannot sign a body. The OTLP serializers and aws4fetch's signer do the work; the
 * credentials are the function's own (Lambda sets them in the environment).
 */
import { AwsClient } from 'aws4fetch';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** `ExportResultCode.SUCCESS` and `FAILED` of `@opentelemetry/core`, without loading it for two numbers. */
const success = 0;
const failed = 1;

export interface SigV4ExporterOptions {
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  headers: Record<string, string>;
  service: string;
  region: string;
}

/** Sends spans to an OTLP/HTTP endpoint that wants SigV4 (X-Ray). */
export class SigV4Exporter implements SpanExporter {
  private readonly sending = new Set<Promise<void>>();

  constructor(private readonly options: SigV4ExporterOptions) {}

  export(spans: ReadableSpan[], done: (result: { code: number; error?: Error }) => void): void {
    const sent = this.send(spans).then(
      () => done({ code: success }),
      (error: unknown) => done({ code: failed, error: error instanceof Error ? error : new Error(String(error)) }),
    );
    this.sending.add(sent);
    void sent.finally(() => this.sending.delete(sent));
  }

  private async send(spans: ReadableSpan[]): Promise<void> {
    const json = this.options.protocol === 'http/json';
    const body = (json ? JsonTraceSerializer : ProtobufTraceSerializer).serializeRequest(spans);
    if (!body) throw new Error('The spans could not be serialized.');
    const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN: sessionToken } = process.env;
    if (!accessKeyId || !secretAccessKey) throw new Error('No AWS credentials in the environment to sign the traces with.');
    const client = new AwsClient({ accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}), service: this.options.service, region: this.options.region });
    const response = await client.fetch(this.options.url, {
      method: 'POST',
      headers: { ...this.options.headers, 'content-type': json ? 'application/json' : 'application/x-protobuf' },
      body: body as Uint8Array<ArrayBuffer>,
    });
    if (!response.ok) throw new Error(`The OTLP endpoint answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  }

  async forceFlush(): Promise<void> {
    await Promise.all([...this.sending]);
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
  }
}
