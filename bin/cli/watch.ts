/**
 * A run's live event stream for a person at a terminal: the agents' text as the model writes it,
 * each tool call and its outcome, calls waiting for approval (with the command that decides
 * them), then the final state. The stream is AG-UI over server-sent events
 * (`GET /runs/{runId}/events`, docs/events.md, "The event stream"); a dropped connection is
 * resumed from the last event id, so nothing is printed twice and nothing is missed.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { ApiClient } from '../../functions/api/client.js';
import type { RunView } from '../../functions/api/schemas.js';
import type { AgentName } from '../../functions/core/agents/types.js';
import { phaseOf } from '../../functions/core/agents/phases.js';
import { ApiError } from './client.js';
import { describeToolCall, describeWaiting } from './describe.js';

/** One stream event as the CLI reads it: the AG-UI `type` and the fields it uses. */
interface StreamEvent {
  type: string;
  name?: string;
  value?: Record<string, unknown>;
  stepName?: string;
  messageId?: string;
  delta?: string;
  toolCallId?: string;
  toolCallName?: string;
  content?: string;
  message?: string;
  code?: string;
}

export interface WatchOptions {
  /** Writes a piece of output as it is (live text arrives in pieces). */
  out?: (text: string) => void;
  /** The command line that runs stepwise for this person, for the hints. @default 'stepwise' */
  command?: string;
  /** Resume after this event id instead of from the start. */
  after?: string;
  /** Stop watching after this long (ms); the run goes on. */
  timeoutMs?: number;
  /** Connection attempts in a row that may fail before giving up. @default 8 */
  maxReconnects?: number;
  /** The first wait before reconnecting (ms); doubles up to 5 s. @default 250 */
  backoffMs?: number;
  /** Called with each event's id, after the event is printed (tests, and `--json` callers). */
  onEvent?: (id: string | undefined, event: StreamEvent) => void;
}

/** Why the stream ended: the run finished, or the watch stopped (timeout) while it goes on. */
export type WatchEnd = { ended: true; lastEventId?: string } | { ended: false; lastEventId?: string };

/**
 * Prints a run's events until it ends, reconnecting after a dropped stream with `Last-Event-ID`.
 * Returns the last event id and whether the run ended.
 */
export async function watchEvents(client: Pick<ApiClient, 'events'>, runId: string, options: WatchOptions = {}): Promise<WatchEnd> {
  const printer = new Printer(runId, options.out ?? ((text) => process.stdout.write(text)), options.command ?? 'stepwise');
  const deadline = Date.now() + (options.timeoutMs ?? 24 * 60 * 60 * 1000);
  const maxReconnects = options.maxReconnects ?? 8;
  let lastEventId = options.after;
  let failures = 0;
  for (;;) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), Math.max(0, deadline - Date.now()));
    try {
      const res = await client.events(runId, { after: lastEventId, signal: controller.signal });
      if (!res.body) throw new ApiError(0, 'Unreachable', 'the event stream had no body');
      const events = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      for await (const message of events) {
        const event = JSON.parse(message.data) as StreamEvent;
        printer.print(event);
        if (message.id) lastEventId = message.id;
        failures = 0;
        options.onEvent?.(message.id, event);
        if (event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR') {
          printer.flush();
          return { ended: true, ...(lastEventId ? { lastEventId } : {}) };
        }
      }
      // The server closed the stream before the run ended (its time limit): resume at once.
    } catch (error) {
      if (controller.signal.aborted && Date.now() >= deadline) {
        printer.flush();
        return { ended: false, ...(lastEventId ? { lastEventId } : {}) };
      }
      // An answer (404, 401, …) will not change by asking again; a dropped connection may.
      if (error instanceof ApiError && error.status !== 0 && error.status < 500) throw error;
      failures += 1;
      if (failures > maxReconnects) throw error;
      const wait = Math.min(5_000, (options.backoffMs ?? 250) * 2 ** (failures - 1));
      await new Promise((resolve) => setTimeout(resolve, wait));
    } finally {
      clearTimeout(timer);
    }
    if (Date.now() >= deadline) {
      printer.flush();
      return { ended: false, ...(lastEventId ? { lastEventId } : {}) };
    }
  }
}

/** Watches a run to its end and returns its final state, printing as `watchEvents` does. */
export async function watch(client: Pick<ApiClient, 'events' | 'getRun'>, runId: string, options: WatchOptions = {}): Promise<RunView> {
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  await watchEvents(client, runId, { ...options, out });
  const run = await client.getRun(runId);
  const iterations = Object.entries(run.iterations).map(([a, n]) => `${a} ${n}`).join(', ');
  out(`${run.status} · iterations: ${iterations || 'none'} · tokens: ${run.usage.inputTokens} in, ${run.usage.outputTokens} out\n`);
  return run;
}

/** Turns events into terminal lines; live text is written as it comes, on its own line. */
class Printer {
  private agent: AgentName | undefined;
  private midLine = false;
  private readonly calls = new Map<string, { name: string; args: string }>();
  private readonly results = new Map<string, string>();

  constructor(
    private readonly runId: string,
    private readonly out: (text: string) => void,
    private readonly command: string,
  ) {}

  print(event: StreamEvent): void {
    switch (event.type) {
      case 'STEP_STARTED':
        this.agent = event.stepName as AgentName;
        this.line(`phase ${phaseOf(this.agent)} · ${this.agent}`);
        return;
      case 'TEXT_MESSAGE_START':
        this.flush();
        this.out(`  ${this.agent ?? 'agent'}: `);
        this.midLine = true;
        return;
      case 'TEXT_MESSAGE_CONTENT':
        this.out((event.delta ?? '').replaceAll('\n', '\n    '));
        this.midLine = true;
        return;
      case 'TEXT_MESSAGE_END':
        this.flush();
        return;
      case 'TOOL_CALL_START':
        this.calls.set(event.toolCallId ?? '', { name: event.toolCallName ?? 'tool', args: '' });
        return;
      case 'TOOL_CALL_ARGS': {
        const call = this.calls.get(event.toolCallId ?? '');
        if (call) call.args += event.delta ?? '';
        return;
      }
      case 'TOOL_CALL_END': {
        const call = this.calls.get(event.toolCallId ?? '');
        if (call) this.line(`  → ${this.agent ?? 'agent'}: ${describeToolCall(call.name, parsed(call.args))}`);
        return;
      }
      case 'TOOL_CALL_RESULT':
        this.results.set(event.toolCallId ?? '', event.content ?? '');
        return;
      case 'RUN_ERROR':
        this.line(`error: ${event.code ?? 'RunFailed'}: ${event.message ?? ''}`);
        return;
      case 'CUSTOM':
        this.custom(event.name ?? '', event.value ?? {});
        return;
      default:
        return;
    }
  }

  private custom(name: string, value: Record<string, unknown>): void {
    const toolCallId = String(value.toolCallId ?? '');
    switch (name) {
      case 'stepwise.approval_requested':
        this.line(describeWaiting(this.runId, { toolUseId: toolCallId, name: String(value.tool ?? ''), input: value.input } as Parameters<typeof describeWaiting>[1], this.command));
        return;
      case 'stepwise.approval_decided': {
        const words = value.message ?? value.reason;
        this.line(`  ${value.decision === 'approve' ? '✓ approved' : '✗ denied'} by ${String(value.decidedBy ?? 'a reviewer')}${words ? `: ${String(words)}` : ''}`);
        return;
      }
      case 'stepwise.tool_result':
        if (value.isError) this.line(`  ✗ ${this.agent ?? 'agent'}: ${(this.results.get(toolCallId) ?? '').split('\n')[0]?.slice(0, 160)}`);
        this.results.delete(toolCallId);
        return;
      case 'stepwise.run_ended':
        this.line(`phase ${String(value.phase ?? '')}`);
        return;
      case 'stepwise.plan': {
        const plan = value.plan as { steps?: unknown[] } | undefined;
        this.line(`  plan: ${plan?.steps?.length ?? 0} steps`);
        return;
      }
      default:
        return;
    }
  }

  private line(text: string): void {
    this.flush();
    this.out(`${text}\n`);
  }

  /** Ends a line of live text, if one is open. */
  flush(): void {
    if (this.midLine) this.out('\n');
    this.midLine = false;
  }
}

function parsed(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}
