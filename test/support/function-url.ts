/**
 * Lambda function URLs without Lambda: request events as a function URL sends them (payload 2.0),
 * and the Node.js runtime's response streaming (`awslambda.streamifyResponse`,
 * `awslambda.HttpResponseStream.from`), so a streaming handler can be invoked in a test and its
 * answer read chunk by chunk as the client would receive it.
 */
import { Writable } from 'node:stream';

export interface UrlRequest {
  method: string;
  path: string;
  query?: string;
  headers?: Record<string, string>;
  body?: string;
  /** `AWS_IAM` mode: the signed caller's ARN. Without it the event is what `NONE` mode sends. */
  iamArn?: string;
}

/** A function URL's request event (payload format 2.0), shaped after the one AWS documents. */
export function functionUrlEvent(request: UrlRequest): Record<string, unknown> {
  const domainName = 'abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: request.path,
    rawQueryString: request.query ?? '',
    headers: { host: domainName, 'user-agent': 'test', ...request.headers },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abcdefghijklmnopqrstuvwxyz012345',
      authentication: null,
      ...(request.iamArn
        ? {
            authorizer: {
              iam: {
                accessKey: 'ASIAEXAMPLE',
                accountId: '111122223333',
                callerId: 'AROAEXAMPLE:session',
                cognitoIdentity: null,
                principalOrgId: null,
                userArn: request.iamArn,
                userId: 'AROAEXAMPLE:session',
              },
            },
          }
        : {}),
      domainName,
      domainPrefix: 'abcdefghijklmnopqrstuvwxyz012345',
      http: { method: request.method, path: request.path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'test' },
      requestId: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
      routeKey: '$default',
      stage: '$default',
      time: '23/Nov/2026:19:03:58 +0000',
      timeEpoch: 1_795_460_638_390,
    },
    ...(request.body !== undefined ? { body: request.body } : {}),
    isBase64Encoded: false,
  };
}

/** The status and headers a streaming handler sends before its body (`HttpResponseStream.from`). */
export interface Prelude {
  statusCode: number;
  headers: Record<string, string>;
  cookies?: string[];
}

/** The client's end of a streamed response: the prelude, each chunk as written, and whether it ended. */
export class ResponseSink extends Writable {
  prelude?: Prelude;
  readonly chunks: string[] = [];
  private waiters: { test: (text: string) => boolean; resolve: () => void }[] = [];

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.chunks.push(chunk.toString());
    const text = this.text();
    this.waiters = this.waiters.filter((waiter) => (waiter.test(text) ? (waiter.resolve(), false) : true));
    done();
  }

  /** Everything received so far. */
  text(): string {
    return this.chunks.join('');
  }

  /** Resolves once the received text contains `part` (never, if it never comes: the test then times out). */
  received(part: string): Promise<void> {
    if (this.text().includes(part)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ test: (text) => text.includes(part), resolve }));
  }

  /** The body as JSON. */
  json(): unknown {
    return JSON.parse(this.text());
  }
}

/** What the fake runtime marks a streamified handler with, as the real one does. */
export const streaming = Symbol('streaming');

/** A handler as the runtime calls it once streamified. */
export type StreamingHandler = ((event: unknown, response: Writable, context: unknown) => Promise<void>) & { [streaming]?: true };

/**
 * Installs the `awslambda` global the Node.js runtime provides, enough for Hono's `streamHandle`:
 * `streamifyResponse` marks the handler (the runtime streams only marked handlers),
 * `HttpResponseStream.from` records the prelude on the sink. Returns a function that removes it.
 */
export function installLambdaStreaming(): () => void {
  const global = globalThis as { awslambda?: unknown };
  global.awslambda = {
    streamifyResponse: (handler: StreamingHandler) => Object.assign(handler, { [streaming]: true as const }),
    HttpResponseStream: {
      from: (sink: ResponseSink, prelude: Prelude) => {
        sink.prelude = prelude;
        return sink;
      },
    },
  };
  return () => delete global.awslambda;
}

/** Invokes a streamified handler with a function URL request; resolves when the handler has ended the response. */
export async function invokeUrl(handler: unknown, request: UrlRequest, sink = new ResponseSink()): Promise<ResponseSink> {
  await (handler as StreamingHandler)(functionUrlEvent(request), sink, {});
  return sink;
}
