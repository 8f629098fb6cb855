/**
 * The console on the local server (docs/console.md, "How it is built"): `/console/*` answers the
 * built files with the console's CSP and cache headers, any other path under it with index.html
 * (the page routes itself), and `/console/config.json` with the local settings: sign-in through
 * the local issuer, the tools and models a run may name. The files are read (or built, when the
 * sources are newer than `dist/console`) on the first request, so the dev server needs no build step.
 */
import { Hono } from 'hono';
import { type ConsoleFile, cacheControlOf, consoleBase, currentConsole } from '../console/build.js';
import { consoleCsp, consoleSecurityHeaders } from '../console/csp.js';
import type { ConsoleConfig } from '../console/src/config.js';

/** Routes for `/console` and `/console/*`, mounted on the local server's app. */
export function consoleRoutes(config: ConsoleConfig, load: () => ConsoleFile[] = currentConsole): Hono {
  let files: Map<string, ConsoleFile> | undefined;
  const fileAt = (path: string) => {
    files ??= new Map(load().map((file) => [file.path, file]));
    return files.get(path);
  };
  const headers = (file: Pick<ConsoleFile, 'contentType' | 'cache'>) => ({
    'content-type': file.contentType,
    'cache-control': cacheControlOf(file),
    'content-security-policy': consoleCsp(),
    ...consoleSecurityHeaders,
  });
  const app = new Hono();
  app.get('/console', (c) => c.redirect(consoleBase, 301));
  app.get('/console/config.json', (c) =>
    c.body(JSON.stringify(config), 200, headers({ contentType: 'application/json', cache: 'no-cache' })),
  );
  app.get('/console/*', (c) => {
    const path = c.req.path.slice(consoleBase.length);
    const file = fileAt(path);
    if (file) return c.body(file.bytes as Uint8Array<ArrayBuffer>, 200, headers(file));
    // A hashed asset that is not there is a 404; any other path is a page of the console.
    if (path.startsWith('assets/')) return c.body('Not found.', 404, headers({ contentType: 'text/plain; charset=utf-8', cache: 'no-cache' }));
    const index = fileAt('index.html');
    if (!index) throw new Error('The console build has no index.html.');
    return c.body(index.bytes as Uint8Array<ArrayBuffer>, 200, headers(index));
  });
  return app;
}

/** The local server's app with the console in front: `/console` and `/console/*` go to the console, the rest to `app`. */
export function withConsole<App extends { fetch(request: Request): Response | Promise<Response> }>(
  app: App,
  site: Hono,
): { fetch(request: Request): Response | Promise<Response> } {
  return {
    fetch(request) {
      const { pathname } = new URL(request.url);
      return pathname === '/console' || pathname.startsWith(consoleBase) ? site.fetch(request) : app.fetch(request);
    },
  };
}
