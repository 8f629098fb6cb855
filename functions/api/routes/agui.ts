/** `POST /agui`: one turn for an AG-UI client, started as `POST /runs` starts a run, answered with its event stream. */
import { createRoute } from '@hono/zod-openapi';
import { createRun } from '../../core/intake/create.js';
import { ClientRunId } from '../../core/intake/request.js';
import { json, jsonBody, refusal, routes } from '../middleware.js';
import { AguiRunInput, answerStream, eventStream, holdStreamSlot, runBodyOf } from '../stream.js';
import type { ApiDeps } from '../types.js';

/** The AG-UI route. */
export function aguiRoutes(deps: ApiDeps) {
  return routes().openapi(
    createRoute({
      method: 'post',
      path: '/agui',
      summary: 'Run one turn for an AG-UI client and stream its events',
      description:
        'Takes an AG-UI RunAgentInput: `threadId` is the session, the last user message the goal, `forwardedProps.stepwise` the other `POST /runs` fields ' +
        '(`agent`: the agent of the thread, by default the assistant of mode single; not a workflow). ' +
        'Starts the run as `POST /runs` does (a `runId` that is a valid Stepwise run id makes a repeat start it once) and answers with its event stream.',
      middleware: [jsonBody] as const,
      request: { body: { required: true, content: json(AguiRunInput) } },
      responses: {
        200: eventStream,
        400: refusal('Invalid input; `issues` names each bad field.'),
        404: refusal('The run id is one of a run the caller may not see (the answer to a missing run).'),
        409: refusal('The thread has a running run.'),
        429: refusal('Too many runs running (`TooManyRuns`), the daily budget spent (`BudgetExceeded`), or as many streams open as the deployment allows (`TooManyStreams`).'),
      },
    }),
    async (c) => {
      const input = c.req.valid('json');
      const runId = ClientRunId.safeParse(input.runId).success ? input.runId : undefined;
      const body = runBodyOf(input, deps);
      // The stream's slot first: a caller with every stream open starts no run it could not watch.
      const release = await holdStreamSlot(c.var.caller, deps);
      let run;
      try {
        const started = await createRun(body, deps, { caller: c.var.caller, ...(runId ? { runId } : {}) });
        run = await deps.runs.get(started.runId);
        if (!run) throw new Error(`Run ${started.runId} vanished after it was created.`);
      } catch (error) {
        await release();
        throw error;
      }
      return answerStream(c, run, undefined, deps, { release });
    },
  );
}
