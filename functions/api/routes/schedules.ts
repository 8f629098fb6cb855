/** Schedules (docs/schedules.md): create one, list the caller's, read, pause, resume and delete one. */
import { createRoute } from '@hono/zod-openapi';
import * as z from 'zod';
import { SchedulesPage, SchedulesQuery, ScheduleView, createScheduleBody, viewOf } from '../../core/schedules/request.js';
import { type ScheduleDeps, createSchedule, deleteSchedule, listSchedules, scheduleFor, setScheduleState } from '../../core/schedules/schedules.js';
import { ScheduleId } from '../../core/schedules/types.js';
import { NotImplemented } from '../errors.js';
import { json, jsonBody, refusal, routes } from '../middleware.js';
import type { ApiDeps } from '../types.js';

const scheduleParams = z.object({ scheduleId: ScheduleId });
const noSchedule = { 404: refusal('No such schedule (or not yours).') };

/** `POST /schedules`, `GET /schedules`, `GET|DELETE /schedules/{scheduleId}`, `POST /schedules/{scheduleId}/pause|resume`. */
export function scheduleRoutes(deps: ApiDeps) {
  const now = () => (deps.clock ?? (() => new Date()))();
  const scheduling = (): ScheduleDeps => {
    if (!deps.schedules || !deps.scheduleTrigger) throw new NotImplemented('This deployment has no schedules.');
    return {
      schedules: deps.schedules,
      trigger: deps.scheduleTrigger,
      newId: deps.newId,
      ...(deps.clock ? { clock: deps.clock } : {}),
      ...(deps.maxSchedulesPerCaller ? { maxSchedulesPerCaller: deps.maxSchedulesPerCaller } : {}),
    };
  };
  const stateRoute = (action: 'pause' | 'resume') =>
    createRoute({
      method: 'post',
      path: `/schedules/{scheduleId}/${action}`,
      summary: action === 'pause' ? 'Pause a schedule: it fires no more until resumed' : 'Resume a paused schedule',
      request: { params: scheduleParams },
      responses: { 200: { description: 'The schedule.', content: json(ScheduleView) }, ...noSchedule },
    });
  return routes()
    .openapi(
      createRoute({
        method: 'post',
        path: '/schedules',
        summary: 'Create a schedule that starts a run on a cron or rate expression',
        middleware: [jsonBody] as const,
        request: { body: { required: true, content: json(createScheduleBody(deps)) } },
        responses: {
          201: { description: 'Created, enabled.', content: json(ScheduleView) },
          400: refusal('Invalid input; `issues` names each bad field (`schedule`, `timezone`, `run.goal`, …).'),
          429: refusal('`TooManySchedules`: the caller has as many schedules as the deployment allows.'),
        },
      }),
      async (c) => c.json(viewOf(await createSchedule(c.req.valid('json'), c.var.caller, scheduling()), now()), 201),
    )
    .openapi(
      createRoute({
        method: 'get',
        path: '/schedules',
        summary: "The caller's schedules (or, for admins, their tenant's)",
        request: { query: SchedulesQuery },
        responses: {
          200: { description: 'The schedules.', content: json(SchedulesPage) },
          403: refusal('`scope=tenant` needs the admin role.'),
        },
      }),
      async (c) => {
        const items = await listSchedules(c.var.caller, c.req.valid('query').scope, scheduling());
        return c.json({ items: items.map((s) => viewOf(s, now())) }, 200);
      },
    )
    .openapi(
      createRoute({
        method: 'get',
        path: '/schedules/{scheduleId}',
        summary: 'A schedule',
        request: { params: scheduleParams },
        responses: { 200: { description: 'The schedule.', content: json(ScheduleView) }, ...noSchedule },
      }),
      async (c) => c.json(viewOf(await scheduleFor(c.var.caller, c.req.valid('param').scheduleId, scheduling()), now()), 200),
    )
    .openapi(
      createRoute({
        method: 'delete',
        path: '/schedules/{scheduleId}',
        summary: 'Delete a schedule: it fires no more (runs it started go on)',
        request: { params: scheduleParams },
        responses: { 204: { description: 'Deleted.' }, ...noSchedule },
      }),
      async (c) => {
        await deleteSchedule(c.var.caller, c.req.valid('param').scheduleId, scheduling());
        return c.body(null, 204);
      },
    )
    .openapi(stateRoute('pause'), async (c) => c.json(viewOf(await setScheduleState(c.var.caller, c.req.valid('param').scheduleId, 'paused', scheduling()), now()), 200))
    .openapi(stateRoute('resume'), async (c) => c.json(viewOf(await setScheduleState(c.var.caller, c.req.valid('param').scheduleId, 'enabled', scheduling()), now()), 200));
}
