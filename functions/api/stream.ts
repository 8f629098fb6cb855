/**
 * The event stream routes' parts (docs/events.md, "The event stream"): their schemas, the
 * mapping from an AG-UI `RunAgentInput` to a run, and the server-sent events answer.
 */
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { EventEncoder } from '@ag-ui/encoder';
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import * as z from 'zod';
import { type CreateRunBody, createRunBody } from '../core/intake/request.js';
import { type RunRequestRules } from '../core/intake/types.js';
import type { Run } from '../core/runs/types.js';
import type { Owner } from '../core/callers/types.js';
import { type FollowSettings, type RunEventSources, type StreamSlots, TooManyStreams, defaultMaxStreamsPerCaller } from '../core/stream/types.js';
import { RunEventReader } from '../core/stream/reader.js';
import { defaultFollowSettings, followRun, readNow } from '../core/stream/follow.js';
import { type ErrorLog, type Issue, NotImplemented, ValidationFailed } from './errors.js';

/** A cursor as the routes take it (the `id` of an event received). */
const Cursor = z.string().min(1).max(64);

export const EventsQuery = z
  .object({ after: Cursor.optional().meta({ description: 'Resume after this event id (as `Last-Event-ID` does; the header wins when both are sent).' }) })
  .strict();

export const EventsHeaders = z.object({
  'Last-Event-ID': Cursor.optional().meta({ description: 'The id of the last event received: the stream resumes after it.' }),
});

/** One page of a run's events (`GET /runs/{runId}/events/page`): the stream's events and ids, as JSON. */
export const EventsPage = z
  .object({
    items: z.array(
      z.object({
        id: z.string().meta({ description: 'The event\'s cursor: `?after=` it gives the events that follow, here and on the stream.' }),
        event: z.looseObject({ type: z.string() }).meta({ description: 'One AG-UI event, as the stream carries it.' }),
      }),
    ),
    done: z.boolean().meta({ description: 'The run has ended and its last event (RUN_FINISHED or RUN_ERROR) is in this page or an earlier one.' }),
  })
  .meta({ id: 'EventsPage' });
export type EventsPage = z.infer<typeof EventsPage>;

/** The answer of both stream routes, as the OpenAPI document shows it. */
export const eventStream = {
  description:
    'Server-sent events: each `id:` is a cursor, each `data:` one AG-UI event (RUN_STARTED, STEP_*, TEXT_MESSAGE_*, TOOL_CALL_*, CUSTOM `stepwise.*`), ' +
    'ending with RUN_FINISHED or RUN_ERROR. A stream open for its longest duration ends with a comment naming the last cursor; resume with it.',
  content: { 'text/event-stream': { schema: z.string().meta({ description: 'SSE frames.' }) } },
};

/**
 * AG-UI's `RunAgentInput`, validated whole by `@ag-ui/core`'s own schema. The fields Stepwise
 * reads are declared for the OpenAPI document (the AG-UI schema itself cannot be written there).
 */
export const AguiRunInput = z
  .looseObject({
    threadId: z.string().meta({ description: 'The session: a thread continues its conversation memory, turn after turn.' }),
    runId: z.string().meta({ description: 'The run id, when it is a valid Stepwise run id (1-56 letters, digits, "_", "-"): repeating it starts the run once.' }),
    messages: z
      .array(z.looseObject({ id: z.string(), role: z.string(), content: z.unknown().optional() }))
      .meta({ description: 'The thread so far; the last user message is the goal of this turn.' }),
    forwardedProps: z
      .looseObject({
        stepwise: z
          .record(z.string(), z.unknown())
          .optional()
          .meta({ description: 'Other `POST /runs` fields; `agent` is the agent of the thread (`GET /agents` lists them), the assistant by default. No workflow: a thread is one agent\'s conversation.' }),
      })
      .optional(),
  })
  .superRefine((input, ctx) => {
    const parsed = RunAgentInputSchema.safeParse(input);
    if (!parsed.success) for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
  })
  .meta({ id: 'RunAgentInput', description: "AG-UI's RunAgentInput (https://docs.ag-ui.com)." });
export type AguiRunInput = z.infer<typeof AguiRunInput>;

/**
 * The `POST /runs` body an AG-UI turn asks for: the last user message is the goal, the thread
 * is the session, `forwardedProps.stepwise` carries the other fields. A thread continues one
 * agent's conversation: the agent `forwardedProps.stepwise.agent` names, else the assistant
 * (mode single, whatever mode it names); a workflow is refused.
 */
export function runBodyOf(input: AguiRunInput, rules: RunRequestRules = {}): CreateRunBody {
  const { mode: _mode, workflow, ...stepwise } = input.forwardedProps?.stepwise ?? {};
  const goal = lastUserText(input.messages);
  const refused: Issue[] =
    workflow === undefined ? [] : [{ path: 'forwardedProps.stepwise.workflow', message: "a thread continues one agent's conversation: name an agent, not a workflow" }];
  const target = stepwise.agent === undefined ? { mode: 'single' } : {};
  const parsed = createRunBody(rules).safeParse({ ...stepwise, ...target, goal, sessionId: input.threadId });
  if (parsed.success && !refused.length) return parsed.data;
  const where = (path: PropertyKey[]) => {
    const [field] = path;
    if (field === 'goal') return 'messages';
    if (field === 'sessionId') return 'threadId';
    return ['forwardedProps', 'stepwise', ...path].join('.');
  };
  const issues: Issue[] = [
    ...refused,
    ...(parsed.success ? [] : parsed.error.issues).map((i) => ({
      path: where(i.path),
      message: i.path[0] === 'goal' && goal === '' ? 'must end with a user message that has text' : i.message,
    })),
  ];
  throw new ValidationFailed(`The body is invalid: ${[...new Set(issues.map((i) => i.path))].join(', ')}.`, issues);
}

/** The text of the last user message: its string, or its text parts joined. */
function lastUserText(messages: AguiRunInput['messages']): string {
  const last = messages.findLast((m) => m.role === 'user');
  const content: unknown = last?.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((part): part is { type: 'text'; text: string } => typeof part === 'object' && part !== null && part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text)
    .join('\n');
}

export interface StreamDeps {
  /** What the stream reads; the stream routes answer 501 without it. */
  events?: RunEventSources;
  /** Polling, heartbeat and longest duration. @default defaultFollowSettings */
  stream?: Partial<FollowSettings>;
  log?: ErrorLog;
  /** The open streams of each caller; no cap without it (tests of the stream alone). */
  streamSlots?: StreamSlots;
  /** The most streams one caller may have open at once. @default defaultMaxStreamsPerCaller */
  maxStreamsPerCaller?: number;
}

/**
 * Holds one of the caller's stream slots for a stream about to open (`429 TooManyStreams` when
 * every one is held); answers the function that gives it back, once however often it is called.
 */
export async function holdStreamSlot(owner: Owner, deps: StreamDeps): Promise<() => Promise<void>> {
  const slots = deps.streamSlots;
  if (!slots) return async () => {};
  const limit = deps.maxStreamsPerCaller ?? defaultMaxStreamsPerCaller;
  const streamId = randomUUID();
  if (!(await slots.take(owner, streamId, limit))) {
    throw new TooManyStreams(`You have ${limit} event streams open, the most this deployment allows; close one, or resume later from the last cursor.`);
  }
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    // A slot not given back is taken over once its lease runs out: a failure here costs a slot for a while, not the answer.
    await slots.release(owner, streamId).catch((error: unknown) => (deps.log ?? console).error('Freeing a stream slot failed', error instanceof Error ? error : new Error(String(error))));
  };
}

/**
 * A run's events after `after` (all of them without) as far as the stores show them now: the
 * derivation of the stream, read once, for clients that poll (the HTTP API cannot stream).
 */
export async function eventsPage(run: Run, after: string | undefined, deps: StreamDeps): Promise<EventsPage> {
  if (!deps.events) throw new NotImplemented('This deployment does not serve run events.');
  const { events, done } = await readNow(new RunEventReader(deps.events, run, after));
  return { items: events.map(({ cursor, event }) => ({ id: cursor, event: event as EventsPage['items'][number]['event'] })), done };
}

/** The run's reader and its first read. */
async function openReader(run: Run, after: string | undefined, deps: StreamDeps) {
  if (!deps.events) throw new NotImplemented('This deployment does not serve event streams.');
  const reader = new RunEventReader(deps.events, run, after);
  return { reader, first: await reader.tick() };
}

/**
 * Answers with a run's events after `after` (all of them without): 204 when the run has ended
 * and nothing follows the cursor, else a server-sent events stream that ends after the run's
 * last event, at the longest duration (with a comment naming the cursor to resume from), or
 * when the client goes away. The stream holds one of the caller's stream slots while it lasts:
 * the `owner`'s, taken once there is something to stream, or one held already (`release` gives it
 * back).
 */
export async function answerStream(
  c: Context,
  run: Run,
  after: string | undefined,
  deps: StreamDeps,
  slot: { owner: Owner } | { release: () => Promise<void> },
): Promise<Response> {
  const settings = { ...defaultFollowSettings, ...deps.stream };
  const held = 'release' in slot ? slot.release : undefined;
  const opened = await openReader(run, after, deps).catch(async (error: unknown) => {
    await held?.();
    throw error;
  });
  if (opened.first.done && opened.first.events.length === 0) {
    await held?.();
    return c.body(null, 204);
  }
  // Taken after the first read, so a stream opens as soon as before and a 204 takes none.
  const release = 'release' in slot ? slot.release : await holdStreamSlot(slot.owner, deps);
  // Proxies that buffer (nginx) pass the stream through as it comes.
  c.header('X-Accel-Buffering', 'no');
  return streamSSE(c, async (stream) => {
    const stop = new AbortController();
    const abort = () => stop.abort();
    c.req.raw.signal.addEventListener('abort', abort, { once: true });
    stream.onAbort(abort);
    const encoder = new EventEncoder();
    try {
      for await (const out of followRun(opened.reader, opened.first, { ...settings, signal: stop.signal })) {
        if (out.kind === 'event') await stream.write(`id: ${out.cursor}\n${encoder.encodeSSE(out.event)}`);
        else if (out.kind === 'heartbeat') await stream.write(': keep-alive\n\n');
        else await stream.write(`: the stream ends after ${Math.round(settings.maxDurationMs / 1000)} s; resume with Last-Event-ID: ${out.cursor ?? ''}\n\n`);
      }
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      if (deps.log) deps.log.error('Event stream failed', failure);
      else console.error(JSON.stringify({ level: 'error', message: 'Event stream failed', error: String(failure) }));
      await stream.write(`: ${failure.name}; resume with Last-Event-ID: ${opened.reader.cursor ?? ''}\n\n`);
    } finally {
      c.req.raw.signal.removeEventListener('abort', abort);
      await release();
    }
  });
}
