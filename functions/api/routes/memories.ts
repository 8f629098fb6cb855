/**
 * Long-term memory (docs/memory.md): `GET /memories` lists the caller's memory files of a scope,
 * `GET|DELETE /memories/{path}` reads or deletes one. A caller reaches only its own scopes; a
 * tenant's memory is for the tenant's reviewers and admins, and anyone else is answered as if
 * it held nothing (404), never with a hint that it exists.
 */
import { createRoute } from '@hono/zod-openapi';
import * as z from 'zod';
import { holds } from '../../core/callers/access.js';
import type { Caller } from '../../core/callers/types.js';
import { checkMemoryPath, memoryPath } from '../../core/memory/paths.js';
import { memoryPrefix } from '../../core/memory/scope.js';
import { defaultMemoryLimits, MemoryNotFound, MemoryScope, type MemoryStore } from '../../core/memory/types.js';
import { PathRejected } from '../../core/workspace/types.js';
import { InvalidPath } from '../errors.js';
import { json, refusal, routes } from '../middleware.js';
import type { ApiDeps } from '../types.js';

/** The query of every memory route: which scope, and for `session` which session. */
export const MemoryQuery = z
  .object({
    scope: MemoryScope.default('owner').meta({ description: '`owner` (the default): your own; `tenant`: your tenant\'s (reviewers and admins); `session`: one of your sessions (with `sessionId`).' }),
    sessionId: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_" or "-"').optional(),
  })
  .strict();

export type MemoryQuery = z.infer<typeof MemoryQuery>;

export const MemoryItem = z.object({
  path: z.string().meta({ description: 'The path as the memory tool names it, such as `/memories/notes.md`; `GET /memories/notes.md` reads it.' }),
  size: z.number().int().nonnegative(),
  updatedAt: z.string(),
});

export const MemoriesPage = z
  .object({ items: z.array(MemoryItem), truncated: z.literal(true).optional() })
  .meta({ id: 'MemoriesPage', description: 'The files of one memory scope, in path order.' });

const memoryParams = z.object({ path: z.string().meta({ description: 'The path under /memories; it may contain "/".' }) });
const noMemory = { 404: refusal('No such memory file (or not yours to see).') };

/** The store of the scope the caller asks for, or `MemoryNotFound` when the caller may not see that scope. */
export function memoryOf(caller: Caller, query: MemoryQuery, memoryFor: (prefix: string) => MemoryStore): MemoryStore {
  if (query.scope === 'tenant' && (caller.tenant === undefined || !holds(caller, 'approve'))) {
    throw new MemoryNotFound('No memory here.');
  }
  return memoryFor(memoryPrefix(query.scope, caller, query.sessionId));
}

/** A route's path as a path under /memories, or `InvalidPath` (400). */
function relativeOf(path: string): string {
  try {
    return checkMemoryPath(memoryPath(path));
  } catch (error) {
    if (error instanceof PathRejected) throw new InvalidPath(error.message);
    throw error;
  }
}

/** The memory routes. */
export function memoryRoutes(deps: ApiDeps) {
  const memoryFor = (prefix: string): MemoryStore => {
    if (!deps.memoryFor) throw new Error('Stepwise is misconfigured: the API has no memory store.');
    return deps.memoryFor(prefix);
  };
  return routes()
    .openapi(
      createRoute({
        method: 'get',
        path: '/memories',
        summary: "The caller's memory files of a scope",
        request: { query: MemoryQuery },
        responses: { 200: { description: 'The files.', content: json(MemoriesPage) }, 400: refusal('Invalid query (a session scope without sessionId).'), ...noMemory },
      }),
      async (c) => {
        const store = memoryOf(c.var.caller, c.req.valid('query'), memoryFor);
        const { entries, truncated } = await store.list(defaultMemoryLimits.maxFiles * 2);
        const items = entries.map((entry) => ({ ...entry, path: memoryPath(entry.path) }));
        return c.json({ items, ...(truncated ? { truncated: true as const } : {}) }, 200);
      },
    )
    .openapi(
      createRoute({
        method: 'get',
        // `{path{.+}}` is Hono's parameter that spans "/"; the document writes it `{path}`.
        path: '/memories/{path{.+}}',
        summary: 'One memory file',
        request: { params: memoryParams, query: MemoryQuery },
        responses: {
          200: { description: 'The file text.', content: { 'text/plain': { schema: z.string() } } },
          400: refusal('The path is not a valid memory path.'),
          ...noMemory,
        },
      }),
      async (c) => {
        const relative = relativeOf(c.req.valid('param').path);
        const file = await memoryOf(c.var.caller, c.req.valid('query'), memoryFor).read(relative);
        if (!file) throw new MemoryNotFound(`No memory file ${memoryPath(relative)}.`);
        return c.text(new TextDecoder().decode(file.bytes), 200, { 'content-type': 'text/plain; charset=utf-8' });
      },
    )
    .openapi(
      createRoute({
        method: 'delete',
        path: '/memories/{path{.+}}',
        summary: 'Delete one memory file',
        request: { params: memoryParams, query: MemoryQuery },
        responses: { 204: { description: 'Deleted.' }, 400: refusal('The path is not a valid memory path.'), ...noMemory },
      }),
      async (c) => {
        const relative = relativeOf(c.req.valid('param').path);
        const store = memoryOf(c.var.caller, c.req.valid('query'), memoryFor);
        if (!(await store.read(relative))) throw new MemoryNotFound(`No memory file ${memoryPath(relative)}.`);
        await store.remove([relative]);
        return c.body(null, 204);
      },
    );
}
