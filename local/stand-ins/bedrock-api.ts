/**
 * A local HTTP server that speaks Amazon Bedrock Runtime's InvokeModel for Claude
 * (`POST /model/{modelId}/invoke`, the Messages body with `anthropic_version`) and
 * InvokeModelWithResponseStream (`…/invoke-with-response-stream`: the Messages API's stream
 * events, each the base64 `bytes` of a `chunk` in AWS event-stream framing), and answers with
 * scripted turns or with failures shaped as Bedrock sends them: an `x-amzn-errortype` header and
 * a `{ "message" }` body, or in a stream an exception message (`:exception-type`). Like Bedrock,
 * it checks each request's SigV4 signature (service `bedrock`), so the real SDK's signing is
 * exercised without AWS.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { AwsV4Signer } from 'aws4fetch';
import { bedrockAnthropicVersion } from '../../functions/adapters/model/bedrock.js';
import { localCredentials } from '../../functions/wiring/wire.js';
import { startLoopbackServer } from './http-server.js';
import { type MessagesApi, type Reply, type Responder, type WireRequest, generationMs, messageBody, playStream, promptOf, streamEvents } from './messages-api.js';

export interface BedrockApiOptions {
  /** The Region requests must be signed for. @default any: the one the signature's scope names */
  region?: string;
  /** The one key pair the server accepts. @default the local emulators' fixed pair */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** @default 0 (any free port) */
  port?: number;
}

/** The stand-in: `requests` (what the responder saw) carry the model id from the path as `model`. */
export interface BedrockApi extends MessagesApi {
  /** Request bodies exactly as received, in order. */
  bodies: Record<string, unknown>[];
  /** The operation of each accepted request, in order. */
  operations: ('InvokeModel' | 'InvokeModelWithResponseStream')[];
}

/** A failure as Bedrock reports it. */
interface BedrockFault {
  status: number;
  type: string;
  message: string;
}

/** Starts the stand-in on loopback; `respond` answers each accepted request. */
export async function startBedrockApi(respond: Responder, options: BedrockApiOptions = {}): Promise<BedrockApi> {
  const { region } = options;
  const credentials = options.credentials ?? localCredentials;
  const requests: WireRequest[] = [];
  const bodies: Record<string, unknown>[] = [];
  const prompts: WireRequest[] = [];
  const operations: BedrockApi['operations'] = [];
  const headers: IncomingMessage['headers'][] = [];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const route = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/.exec(req.url?.split('?')[0] ?? '');
    if (req.method !== 'POST' || !route?.[1]) {
      sendFault(res, { status: 404, type: 'UnknownOperationException', message: `No operation ${req.method} ${req.url}` });
      return;
    }
    const unauthenticated = await checkSignature(req, raw, region, credentials);
    if (unauthenticated) {
      sendFault(res, unauthenticated);
      return;
    }
    const streamed = route[2] === 'invoke-with-response-stream';
    const modelId = decodeURIComponent(route[1]);
    const body = parseBody(raw);
    const invalid = typeof body === 'string' ? body : validate(body);
    if (invalid || typeof body === 'string') {
      sendFault(res, { status: 400, type: 'ValidationException', message: invalid ?? 'Malformed input request.' });
      return;
    }
    const request = { ...body, model: modelId } as WireRequest;
    bodies.push(body);
    operations.push(streamed ? 'InvokeModelWithResponseStream' : 'InvokeModel');
    requests.push(request);
    headers.push(req.headers);
    const { prompt } = promptOf(request);
    prompts.push(prompt);
    const reply: Reply = await respond(prompt, requests.length - 1);
    if ('drop' in reply) {
      req.socket.destroy();
      return;
    }
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if ('turn' in reply && streamed) {
      res.writeHead(200, {
        'content-type': 'application/vnd.amazon.eventstream',
        'x-amzn-bedrock-content-type': 'application/json',
        'x-amzn-requestid': `local-${Date.now()}`,
      });
      const events = streamEvents(messageBody(request, reply.turn, requests.length), reply.turn);
      await playStream(events, reply.turn, reply.cut, {
        write: (event) => res.write(chunkFrame(event)),
        // Bedrock names its stream exceptions in camel case: `throttlingException`, `modelStreamErrorException`.
        fail: (error) => res.end(exceptionFrame(error.type, error.message)),
        drop: () => req.socket.destroy(),
        closed: () => res.destroyed,
      });
      if (!res.destroyed) res.end();
    } else if ('turn' in reply) {
      await new Promise((resolve) => setTimeout(resolve, generationMs(reply.turn)));
      send(res, 200, messageBody(request, reply.turn, requests.length));
    } else {
      sendFault(res, reply, reply.headers);
    }
  }

  const server = await startLoopbackServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendFault(res, { status: 500, type: 'InternalServerException', message: String(error) });
    });
  }, options.port ?? 0);
  return { url: server.url, requests, prompts, bodies, operations, headers, close: server.close };
}

function parseBody(raw: Buffer): Record<string, unknown> | string {
  try {
    const body: unknown = JSON.parse(raw.toString('utf8'));
    if (body && typeof body === 'object' && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {
    // Reported below, as Bedrock words it.
  }
  return 'Malformed input request, please reformat your input and try again.';
}

/** What Bedrock's Claude schema refuses before the model sees the request. */
function validate(body: Record<string, unknown>): string | undefined {
  if (body.anthropic_version !== bedrockAnthropicVersion) {
    return `Malformed input request: anthropic_version must be "${bedrockAnthropicVersion}", not ${JSON.stringify(body.anthropic_version)}.`;
  }
  // The model is named by the path; Bedrock refuses keys its schema does not know.
  for (const key of ['model', 'stream']) {
    if (key in body) return `Malformed input request: #: extraneous key [${key}] is not permitted, please reformat your input and try again.`;
  }
  if (typeof body.max_tokens !== 'number' || !Array.isArray(body.messages)) {
    return 'Malformed input request: #: required key [max_tokens] or [messages] not found, please reformat your input and try again.';
  }
  return undefined;
}

/**
 * Recomputes the request's SigV4 signature from the headers it says it signed, with the one key
 * pair the server knows, and compares; also checks the payload hash and the credential scope.
 */
async function checkSignature(
  req: IncomingMessage,
  body: Buffer,
  region: string | undefined,
  credentials: { accessKeyId: string; secretAccessKey: string },
): Promise<BedrockFault | undefined> {
  const authorization = req.headers.authorization ?? '';
  const parts = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
    authorization,
  );
  if (!parts) return { status: 403, type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const [, accessKeyId, , scopeRegion, service, signedHeaders, signature] = parts;
  if (accessKeyId !== credentials.accessKeyId) {
    return { status: 403, type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  }
  if (service !== 'bedrock' || !scopeRegion || (region && scopeRegion !== region)) {
    return {
      status: 403,
      type: 'InvalidSignatureException',
      message: `Credential should be scoped to the correct service and Region: 'bedrock' in '${region ?? scopeRegion}', not '${service}' in '${scopeRegion}'.`,
    };
  }
  const payloadHash = createHash('sha256').update(body).digest('hex');
  const declaredHash = req.headers['x-amz-content-sha256'];
  if (declaredHash !== undefined && declaredHash !== payloadHash) {
    return { status: 400, type: 'ValidationException', message: 'The provided x-amz-content-sha256 header does not match what was computed.' };
  }
  const signed = (signedHeaders ?? '').split(';').filter((name) => name !== 'host');
  const datetime = req.headers['x-amz-date'];
  if (typeof datetime !== 'string' || !signed.includes('x-amz-date')) {
    return { status: 403, type: 'InvalidSignatureException', message: 'Authorization header requires existence of either a \'X-Amz-Date\' or a \'Date\' header.' };
  }
  const headers: Record<string, string> = {};
  for (const name of signed) headers[name] = [req.headers[name] ?? ''].flat().join(',');
  const expected = new AwsV4Signer({
    method: req.method ?? 'POST',
    url: `http://${req.headers.host ?? ''}${req.url ?? ''}`,
    headers,
    body: body.toString('utf8'),
    accessKeyId: credentials.accessKeyId,
    secretAccessKey: credentials.secretAccessKey,
    service: 'bedrock',
    region: scopeRegion,
    datetime,
    allHeaders: true,
  });
  if ((await expected.signature()) !== signature) {
    return {
      status: 403,
      type: 'InvalidSignatureException',
      message: 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
    };
  }
  return undefined;
}

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => new Uint8Array(Buffer.from(text, 'utf8')),
);

const header = (value: string) => ({ type: 'string' as const, value });

/** One event of the answer, as InvokeModelWithResponseStream sends it: a `chunk` whose `bytes` are the event's JSON, base64. */
function chunkFrame(event: Record<string, unknown>): Uint8Array {
  const payload = { bytes: Buffer.from(JSON.stringify(event), 'utf8').toString('base64') };
  return codec.encode({
    headers: { ':message-type': header('event'), ':event-type': header('chunk'), ':content-type': header('application/json') },
    body: new Uint8Array(Buffer.from(JSON.stringify(payload), 'utf8')),
  });
}

/** An exception in the middle of a stream, as Bedrock sends one. */
function exceptionFrame(type: string, message: string): Uint8Array {
  return codec.encode({
    headers: { ':message-type': header('exception'), ':exception-type': header(type), ':content-type': header('application/json') },
    body: new Uint8Array(Buffer.from(JSON.stringify({ message }), 'utf8')),
  });
}

function sendFault(res: ServerResponse, fault: BedrockFault, extra: Record<string, string> = {}): void {
  send(res, fault.status, { message: fault.message }, { 'x-amzn-errortype': `${fault.type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...extra });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': `local-${Date.now()}`,
    ...headers,
  });
  res.end(text);
}
