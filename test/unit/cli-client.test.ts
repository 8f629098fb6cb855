/**
 * How the CLI's requests travel, against a loopback server that records them: SigV4-signed for
 * a deployed API (`execute-api`, or `lambda` for the stream's function URL), a bearer token
 * instead when one is given, neither to the local server; and what it says when nothing answers.
 */
import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, cliClient } from '../../bin/cli/client.js';

let server: Server | undefined;
const seen: { url: string | undefined; authorization: string | undefined }[] = [];

/** A server that answers every request with the run it names. */
async function serve(): Promise<string> {
  server = createServer((req: IncomingMessage, res) => {
    seen.push({ url: req.url, authorization: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ runId: 'run-1' }));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const credentials = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', AWS_SESSION_TOKEN: undefined };
const saved: Record<string, string | undefined> = {};
beforeEach(() => {
  for (const [name, value] of Object.entries(credentials)) {
    saved[name] = process.env[name];
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});
afterEach(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  seen.splice(0);
  const running = server;
  server = undefined;
  if (running) await new Promise((resolve) => running.close(resolve));
});

describe('the CLI client', () => {
  it('signs with SigV4 for execute-api, and for lambda at the stream endpoint, in the region given', async () => {
    const endpoint = await serve();
    await cliClient({ endpoint, sign: true, region: 'eu-west-1' }).getRun('run-1');
    await cliClient({ endpoint, sign: true, region: 'eu-west-1', service: 'lambda' }).getRun('run-1');
    expect(seen.map((s) => s.authorization)).toEqual([
      expect.stringMatching(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, /),
      expect.stringMatching(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/lambda\/aws4_request, /),
    ]);
  });

  it('sends a bearer token instead of signing, and neither to the local server', async () => {
    const endpoint = await serve();
    await cliClient({ endpoint, token: 'token-1' }).getRun('run-1');
    await cliClient({ endpoint }).getRun('a/b?c');
    expect(seen).toEqual([
      { url: '/runs/run-1', authorization: 'Bearer token-1' },
      { url: '/runs/a%2Fb%3Fc', authorization: undefined },
    ]);
  });

  it('says which endpoint it could not reach, and asks after the local server on loopback', async () => {
    const refused = cliClient({ endpoint: 'http://127.0.0.1:9' }).getRun('run-1');
    await expect(refused).rejects.toBeInstanceOf(ApiError);
    await expect(refused).rejects.toMatchObject({
      status: 0,
      code: 'Unreachable',
      message: expect.stringMatching(/^cannot reach http:\/\/127\.0\.0\.1:9 \(.+\); is "npm run dev" running on that port\?$/),
    });
  });
});
