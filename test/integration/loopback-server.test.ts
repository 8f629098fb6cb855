import { Agent, request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { PortInUse, startLoopbackServer } from '../../local/stand-ins/http-server.js';

describe('startLoopbackServer', () => {
  it('listens on a free loopback port and answers there', async () => {
    const server = await startLoopbackServer((_req, res) => res.end('hello'));
    try {
      expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
      expect(await (await fetch(server.url)).text()).toBe('hello');
    } finally {
      await server.close();
    }
  });

  it('refuses a port in use with PortInUse naming the port, and the first server keeps answering', async () => {
    const first = await startLoopbackServer((_req, res) => res.end('first'));
    try {
      const second = startLoopbackServer((_req, res) => res.end('second'), first.port);
      await expect(second).rejects.toBeInstanceOf(PortInUse);
      await expect(second).rejects.toMatchObject({ name: 'PortInUse', port: first.port, message: `Port ${first.port} on 127.0.0.1 is in use.` });
      expect(await (await fetch(first.url)).text()).toBe('first');
    } finally {
      await first.close();
    }
  });

  it('closes at once although a client keeps its connection alive', async () => {
    const server = await startLoopbackServer((_req, res) => res.end('ok'));
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      request(server.url, { agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      })
        .on('error', reject)
        .end();
    });
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    agent.destroy();
  });
});
