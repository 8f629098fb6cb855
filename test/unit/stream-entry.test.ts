/**
 * The stream function's entry (functions/handlers/stream.ts) on a stand-in of the Lambda runtime's
 * response streaming (test/support/function-url.ts): what it serves, and that an answer reaches
 * the client as it is written, not when it is done.
 */
import { type Env, Hono } from 'hono';
import { streamHandle } from 'hono/aws-lambda';
import { streamSSE } from 'hono/streaming';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamRoutesOf } from '../../functions/api/stream-routes.js';
import { ResponseSink, installLambdaStreaming, invokeUrl, streaming } from '../support/function-url.js';

let uninstall: () => void;
beforeAll(() => {
  uninstall = installLambdaStreaming();
});
afterAll(() => uninstall());

describe('the stream function', () => {
  let handler: unknown;
  const saved = { ...process.env };
  beforeAll(async () => {
    // Its wiring reads the environment when the module loads, as in Lambda (nothing is called here).
    Object.assign(process.env, {
      STEPWISE_TABLE: 'table',
      STEPWISE_BUCKET: 'bucket',
      STEPWISE_ORCHESTRATOR_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:orchestrator',
      STEPWISE_AUTH: 'iam',
      STEPWISE_STREAM_MAX_SECONDS: '840',
      AWS_REGION: 'us-east-1',
    });
    ({ handler } = await import('../../functions/handlers/stream.js'));
  });
  afterAll(() => {
    process.env = saved;
  });

  it('exports the handler streamifyResponse marked, the one the runtime streams', () => {
    expect((handler as { [streaming]?: true })[streaming]).toBe(true);
  });

  it('asks a request without an IAM identity for credentials (401) before it reads anything', async () => {
    const sink = await invokeUrl(handler, { method: 'GET', path: '/runs/0f8fad5b-d9cb-469f-a165-70867728950e/events' });
    expect(sink.prelude?.statusCode).toBe(401);
    expect(sink.json()).toMatchObject({ error: { code: 'Unauthenticated' } });
    expect(sink.writableEnded).toBe(true);
  });

  it.each([
    ['POST', '/runs'],
    ['GET', '/runs/0f8fad5b-d9cb-469f-a165-70867728950e'],
    ['POST', '/runs/0f8fad5b-d9cb-469f-a165-70867728950e/cancel'],
    ['GET', '/openapi.json'],
  ])('answers %s %s, a route of the HTTP API, 404 naming the routes it serves, whoever asks', async (method, path) => {
    const sink = await invokeUrl(handler, { method, path, iamArn: 'arn:aws:iam::111122223333:user/alice' });
    expect(sink.prelude?.statusCode).toBe(404);
    expect(sink.json()).toEqual({
      error: { code: 'NotFound', message: `No route ${method} ${path} here: this URL serves GET /runs/{runId}/events, POST /agui, POST /a2a; the HTTP API serves the rest.` },
    });
  });
});

describe('streamRoutesOf behind streamHandle', () => {
  /** A stand-in app: an SSE route that writes one event, waits for the test, writes another; an echo of POST /agui. */
  function standIn(release: Promise<void>) {
    const app = new Hono<Env>();
    app.get('/runs/:runId/events', (c) => {
      const { event } = c.env as { event: { requestContext: { authorizer?: { iam?: { userArn: string } } } } };
      return streamSSE(c, async (stream) => {
        await stream.writeSSE({ id: '1', data: JSON.stringify({ type: 'RUN_STARTED', runId: c.req.param('runId'), by: event.requestContext.authorizer?.iam?.userArn }) });
        await release;
        await stream.writeSSE({ id: '2', data: JSON.stringify({ type: 'RUN_FINISHED' }) });
      });
    });
    app.post('/agui', async (c) => c.json({ echoed: await c.req.json() }, 201));
    app.get('/runs/:runId', (c) => c.text('not a stream route'));
    return streamHandle(streamRoutesOf(app));
  }

  it('sends each event to the client as the route writes it, with the Lambda event passed through', async () => {
    let release = () => {};
    const handler = standIn(new Promise<void>((resolve) => (release = resolve)));
    const sink = new ResponseSink();
    const done = invokeUrl(handler, { method: 'GET', path: '/runs/r1/events', iamArn: 'arn:aws:iam::111122223333:user/alice' }, sink);
    // Buffered, the first event would arrive only after the second was written: this would never resolve.
    await sink.received('id: 1\n\n');
    expect(sink.prelude).toMatchObject({ statusCode: 200, headers: { 'content-type': 'text/event-stream' } });
    const first = `data: {"type":"RUN_STARTED","runId":"r1","by":"arn:aws:iam::111122223333:user/alice"}\nid: 1\n\n`;
    expect(sink.text()).toBe(first);
    expect(sink.writableEnded).toBe(false);
    release();
    await done;
    expect(sink.text()).toBe(`${first}data: {"type":"RUN_FINISHED"}\nid: 2\n\n`);
    expect(sink.chunks.length).toBeGreaterThanOrEqual(2);
    expect(sink.writableEnded).toBe(true);
  });

  it('hands POST /agui its body untouched, and refuses the app\'s other routes', async () => {
    const handler = standIn(Promise.resolve());
    const body = JSON.stringify({ threadId: 't', runId: 'r', messages: [{ id: 'm', role: 'user', content: 'Add 2 and 2.' }] });
    const agui = await invokeUrl(handler, { method: 'POST', path: '/agui', headers: { 'content-type': 'application/json' }, body });
    expect(agui.prelude?.statusCode).toBe(201);
    expect(agui.json()).toEqual({ echoed: JSON.parse(body) });
    const other = await invokeUrl(handler, { method: 'GET', path: '/runs/r1' });
    expect(other.prelude?.statusCode).toBe(404);
  });
});
