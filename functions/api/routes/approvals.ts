/** `POST /runs/{runId}/approvals/{toolUseId}`: a reviewer's decision on a tool call that waits for one. */
import { createRoute } from '@hono/zod-openapi';
import * as z from 'zod';
import { decideApproval } from '../../core/approvals/decide.js';
import { json, jsonBody, refusal, routes, withRun } from '../middleware.js';
import { DecisionBody, DecisionRecorded, RunId, ToolUseId } from '../schemas.js';
import type { ApiDeps } from '../types.js';

/** The decision route. */
export function approvalRoutes(deps: ApiDeps) {
  return routes().openapi(
    createRoute({
      method: 'post',
      path: '/runs/{runId}/approvals/{toolUseId}',
      summary: 'Approve or deny a tool call that waits for a reviewer',
      description: 'Approve: the tool runs. Deny: the model gets an error result saying a reviewer denied the call (with the reason), and the run goes on.',
      middleware: [withRun('decide', deps), jsonBody] as const,
      request: { params: z.object({ runId: RunId, toolUseId: ToolUseId }), body: { required: true, content: json(DecisionBody) } },
      responses: {
        202: { description: 'Recorded; the run goes on.', content: json(DecisionRecorded) },
        400: refusal('Invalid body; `issues` names each bad field.'),
        403: refusal('The caller may see the run but not decide its calls (no approve role, or its own run where reviewers must be separate).'),
        404: refusal('No such run, or no approval request for that tool call.'),
        409: refusal('The call was already decided (by a reviewer or by the timeout), or the run is not running.'),
      },
    }),
    async (c) => c.json(await decideApproval(c.var.run, c.req.valid('param').toolUseId, c.req.valid('json'), c.var.caller.principal, deps), 202),
  );
}
