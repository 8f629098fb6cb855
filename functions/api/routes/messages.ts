/** `GET /runs/{runId}/messages`: a run's transcript, in pages. */
import { createRoute } from '@hono/zod-openapi';
import { type AgentName, BuiltinAgentName } from '../../core/agents/types.js';
import { conversationIdOf } from '../../core/conversation/conversation.js';
import type { ConversationStore } from '../../core/conversation/types.js';
import { placesOf, type Run } from '../../core/runs/types.js';
import { ValidationFailed } from '../errors.js';
import { json, noRun, refusal, routes, runParams, withRun } from '../middleware.js';
import { MessagesPage, MessagesQuery } from '../schemas.js';
import type { ApiDeps } from '../types.js';

const pageSize = 100;
/**
 * The most bytes of JSON a page's messages take: well under Lambda's 6 MB response limit (the
 * envelope, headers and API Gateway's own overhead come on top). A page holds at least one message
 * whatever its size (a body over 100 KB is kept in S3, and one message rarely nears this).
 */
export const pageBytes = 5 * 1024 * 1024;

/** The transcript route. */
export function messageRoutes(deps: ApiDeps) {
  return routes().openapi(
    createRoute({
      method: 'get',
      path: '/runs/{runId}/messages',
      summary: "A run's transcript, in pages",
      middleware: [withRun('read', deps)] as const,
      request: { params: runParams, query: MessagesQuery },
      responses: { 200: { description: 'One page of messages.', content: json(MessagesPage) }, 400: refusal('Invalid query.'), ...noRun },
    }),
    async (c) => c.json(await messagesPage(c.var.run, c.req.valid('query'), deps.conversations), 200),
  );
}

/**
 * The run's own messages (a session's conversation holds earlier runs' too), of one agent or of
 * all the run's agents in turn, after the cursor: the index of the last message of the page before.
 * A page ends at 100 messages or `pageBytes` of JSON, whichever comes first; the cursor goes on.
 */
async function messagesPage(run: Run, query: MessagesQuery, conversations: ConversationStore): Promise<MessagesPage> {
  const places = placesOf(run);
  // A built-in's place names no messages of another run's (an empty page); any other name is a mistake.
  if (query.agent !== undefined && !places.includes(query.agent) && !BuiltinAgentName.safeParse(query.agent).success) {
    const message = `run ${run.runId} has no agent ${JSON.stringify(query.agent)}; its agents are ${places.join(', ')}`;
    throw new ValidationFailed(`The query is invalid: agent: ${message}`, [{ path: 'agent', message }]);
  }
  const agents: AgentName[] = query.agent ? [query.agent] : places;
  const after = query.cursor === undefined ? -1 : Number(query.cursor);
  const items = [];
  for (const agent of agents) {
    const { messages } = await conversations.load(conversationIdOf(run.runId, agent, run.sessionId, run.owner));
    for (const m of messages) {
      if (m.meta.runId !== run.runId) continue;
      const { startedAt, ms, model, usage } = m.meta;
      const call = startedAt !== undefined && ms !== undefined ? { call: { startedAt, ms, ...(model ? { model } : {}), ...(usage ? { usage } : {}) } } : {};
      items.push({ seq: m.seq, agent, role: m.role, content: m.content, ...call });
    }
  }
  const page = [];
  let bytes = 0;
  for (const item of items.slice(after + 1, after + 1 + pageSize)) {
    const size = Buffer.byteLength(JSON.stringify(item));
    if (page.length > 0 && bytes + size > pageBytes) break;
    page.push(item);
    bytes += size;
  }
  const last = after + page.length;
  return { items: page, ...(last < items.length - 1 ? { nextCursor: String(last) } : {}) };
}
