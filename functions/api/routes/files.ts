/** A run's workspace: `GET /runs/{runId}/files` lists it, `GET /runs/{runId}/files/{path}` answers one file. */
import { createRoute } from '@hono/zod-openapi';
import * as z from 'zod';
import type { Run } from '../../core/runs/types.js';
import { FileTooLarge, PathRejected, WorkspaceRefused } from '../../core/workspace/types.js';
import { FileNotFound, InvalidPath } from '../errors.js';
import { json, noRun, refusal, routes, runParams, withRun } from '../middleware.js';
import { FilesPage, RunId } from '../schemas.js';
import type { ApiDeps } from '../types.js';

/**
 * The largest file the files route returns in its body. A Lambda response is at most 6 MB and
 * binary bodies travel base64-encoded (4/3 larger), so 4 MiB leaves room for the envelope.
 */
export const maxFileResponseBytes = 4 * 1024 * 1024;

/** The workspace routes. */
export function fileRoutes(deps: ApiDeps) {
  return routes()
    .openapi(
      createRoute({
        method: 'get',
        path: '/runs/{runId}/files',
        summary: "The run's workspace files",
        middleware: [withRun('read', deps)] as const,
        request: { params: runParams },
        responses: { 200: { description: 'The files.', content: json(FilesPage) }, ...noRun },
      }),
      async (c) => {
        const { entries, truncated } = await deps.workspaceFor(c.var.run.runId).list('', 10_000);
        return c.json({ items: entries, ...(truncated ? { truncated } : {}) }, 200);
      },
    )
    .openapi(
      createRoute({
        method: 'get',
        // `{path{.+}}` is Hono's parameter that spans "/"; the document writes it `{path}`.
        path: '/runs/{runId}/files/{path{.+}}',
        summary: 'One file of the workspace',
        middleware: [withRun('read', deps)] as const,
        request: { params: z.object({ runId: RunId, path: z.string().meta({ description: 'The file path; it may contain "/".' }) }) },
        responses: {
          200: { description: 'The file bytes.', content: { 'application/octet-stream': { schema: z.string().meta({ format: 'binary' }) } } },
          400: refusal('The path is not a valid workspace path.'),
          ...noRun,
          302: { description: `The file is larger than a response carries (${maxFileResponseBytes} bytes): \`Location\` is a presigned link to it, valid for 5 minutes.` },
          413: refusal(`The file is larger than a response can carry (${maxFileResponseBytes} bytes), and no link can be signed.`),
        },
      }),
      async (c) => {
        const run = c.var.run;
        // Hono has already decoded the parameter (leaving malformed escapes as they are).
        const { path } = c.req.valid('param');
        const file = await readFile(run, path, deps);
        if ('link' in file) return c.redirect(file.link, 302);
        return c.body(file.bytes as Uint8Array<ArrayBuffer>, 200, { 'content-type': contentType(path) });
      },
    );
}

/**
 * A file's bytes, or for a file too large for a response a short-lived link to the object
 * itself, when the deployment can sign one. A path the workspace refuses is an `InvalidPath`.
 */
async function readFile(run: Run, path: string, deps: ApiDeps): Promise<{ bytes: Uint8Array } | { link: string }> {
  let bytes: Uint8Array | undefined;
  try {
    bytes = await deps.workspaceFor(run.runId).read(path, { maxBytes: maxFileResponseBytes });
  } catch (error) {
    if (error instanceof PathRejected) throw new InvalidPath(error.message);
    if (error instanceof WorkspaceRefused) throw new InvalidPath(error.message);
    if (error instanceof FileTooLarge) {
      if (deps.fileLinks) return { link: await deps.fileLinks(run.runId, path) };
      throw new FileTooLarge(
        path,
        error.size,
        error.limit,
        `${path} is ${error.size} bytes; this route returns files of at most ${error.limit} bytes. Read it from the run's workspace in S3 (workspaces/${run.runId}/).`,
      );
    }
    throw error;
  }
  if (!bytes) throw new FileNotFound(`No file ${path} in run ${run.runId}.`);
  return { bytes };
}

function contentType(path: string): string {
  if (/\.(md|txt|ts|js|json|py|go|rs|java|css|html|ya?ml|toml|csv|sh)$/i.test(path)) return 'text/plain; charset=utf-8';
  return 'application/octet-stream';
}
