/**
 * The Lambda Invoke API on loopback, for the real `LambdaClient` of Lambda tools:
 * `POST /2015-03-31/functions/{name}/invocations` runs a registered handler with the payload and
 * answers its result; a handler that throws answers `X-Amz-Function-Error: Unhandled` with
 * Lambda's `{ errorType, errorMessage }`, and an unknown function `ResourceNotFoundException`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startLoopbackServer } from './http-server.js';

/** A function as the local Lambda API runs it: the event, and a little of Lambda's context. */
export type LocalFunctionHandler = (
  event: unknown,
  context: { functionName: string; awsRequestId: string; clientContext?: { custom?: Record<string, unknown> } },
) => unknown;

export interface LocalLambdaApi {
  url: string;
  /** Makes a function invocable by name (or by an ARN ending in that name). */
  register(name: string, handler: LocalFunctionHandler): void;
  /** Invocations received, by function name, in order (tests). */
  readonly invocations: Map<string, unknown[]>;
  close(): Promise<void>;
}

const route = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/** Starts the local Lambda API on a loopback port (0 for any free one). */
export async function startLambdaApi(port = 0): Promise<LocalLambdaApi> {
  const handlers = new Map<string, LocalFunctionHandler>();
  const invocations = new Map<string, unknown[]>();

  const answer = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID(), ...headers });
    res.end(JSON.stringify(body));
  };

  const serveInvoke = async (req: IncomingMessage, res: ServerResponse) => {
    const match = req.method === 'POST' ? route.exec(new URL(req.url ?? '/', 'http://local').pathname) : null;
    if (!match?.[1]) return answer(res, 404, { message: `No route for ${req.method} ${req.url}` }, { 'x-amzn-errortype': 'UnknownOperationException' });
    // The name may be an ARN, with or without a qualifier: arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>].
    const given = decodeURIComponent(match[1]);
    const name = given.startsWith('arn:') ? (given.split(':')[6] ?? given) : given;
    const handler = handlers.get(name);
    if (!handler) {
      return answer(res, 404, { Type: 'User', message: `Function not found: ${given}` }, { 'x-amzn-errortype': 'ResourceNotFoundException' });
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let event: unknown;
    try {
      event = text ? JSON.parse(text) : {};
    } catch {
      return answer(res, 400, { Type: 'User', message: 'Could not parse request body into json' }, { 'x-amzn-errortype': 'InvalidRequestContentException' });
    }
    invocations.set(name, [...(invocations.get(name) ?? []), event]);
    try {
      // The caller's ClientContext (base64 JSON), as Lambda hands it to a Node.js handler.
      const header = req.headers['x-amz-client-context'];
      const clientContext = typeof header === 'string' ? (JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { custom?: Record<string, unknown> }) : undefined;
      const result = await handler(event, { functionName: name, awsRequestId: randomUUID(), ...(clientContext ? { clientContext } : {}) });
      answer(res, 200, result ?? null, { 'x-amz-executed-version': '$LATEST' });
    } catch (error) {
      const errorType = error instanceof Error ? error.name : 'Error';
      const errorMessage = error instanceof Error ? error.message : String(error);
      answer(res, 200, { errorType, errorMessage, trace: [] }, { 'x-amz-function-error': 'Unhandled', 'x-amz-executed-version': '$LATEST' });
    }
  };

  const server = await startLoopbackServer((req, res) => {
    serveInvoke(req, res).catch((error: unknown) => answer(res, 500, { message: String(error) }, { 'x-amzn-errortype': 'ServiceException' }));
  }, port);
  return {
    url: server.url,
    register: (name, handler) => void handlers.set(name, handler),
    invocations,
    close: server.close,
  };
}
