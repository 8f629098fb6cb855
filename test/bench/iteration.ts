/**
 * Where an agent-loop iteration's time goes, and which DynamoDB and S3 requests it makes, for
 * `npm run bench`. Everything but the S3 emulator runs in the bench's process, so:
 *
 * - each Lambda handler call is timed by the stack's `wrapHandler` and runs in an async context
 *   naming its function; the API's requests run in one named `api` (the stack's `aroundApi`); a
 *   request made in no such context comes from the orchestrator's own DynamoDB service
 *   integrations (the local runtime makes them; the agent loop has none);
 * - each HTTP request to an emulator is timed client-side through `node:diagnostics_channel`, from
 *   its start to its response's last byte (the SDK's serialization, signing and parsing are the
 *   handler's own time), and attributed to its function, operation and item family: the S3
 *   object's key prefix, or the DynamoDB key in its body, read where the in-process dynalite
 *   receives it;
 * - the model call is timed around the scripted provider's `generate`;
 * - the interpreter is what is left of the wall time between two inference steps: the ASL
 *   interpreter and the local runtime between states, including the Lambda invoke's JSON round
 *   trip of event and result (the event loop's busy and idle time there are told apart).
 *
 * Measuring costs a little: on Node 20 an async context enables promise hooks for the whole
 * process (about 2% of its CPU in a profile of the bench), spread over every phase.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { itemFamilies } from '../../functions/adapters/dynamo/layout.js';
import type { ModelProvider } from '../../functions/core/model/types.js';
import type { LocalHandler } from '../../local/runtime/runtime.js';

/** The function of a request made outside any handler or API request: the orchestrator's service integrations. */
export const orchestrator = 'orchestrator';

export type Service = 'DynamoDB' | 'S3' | 'other';

interface Span {
  start: number;
  end: number;
}

interface Invocation extends Span {
  fn: string;
  /** An inference invocation at a bound of the loop (`continue`, `iteration_limit`): no step, no model call. */
  bound?: boolean;
}

interface RequestSpan extends Span {
  fn: string;
  service: Service;
  /** The API operation: `Query`, `GetObject`, … */
  operation: string;
  /** What it touched: the S3 key prefix; a DynamoDB request's is read from its body when reported. */
  family: string;
  /** A DynamoDB request's body, as the emulator received it. */
  body?: string;
  /** Bytes of the request's and the response's bodies (their `content-length`). */
  sent: number;
  received: number;
}

/** The emulators' endpoints, read when a request is made (the stack knows them once started). */
interface EmulatorEndpoints {
  dynamo(): string | undefined;
  s3(): string | undefined;
}

const portOf = (url: string | undefined) => (url ? new URL(url).port : undefined);

/** Records handler calls, emulator requests, model calls and GC pauses of the bench's process while attached. */
export class IterationProfile {
  private readonly context = new AsyncLocalStorage<string>();
  /** DynamoDB requests sent whose body the emulator has not yet received. */
  private readonly unread = new Map<ClientRequest, RequestSpan>();
  invocations: Invocation[] = [];
  requests: RequestSpan[] = [];
  modelCalls: Span[] = [];
  gcPauses: Span[] = [];
  /** The event loop's busy and idle ms between handler calls. */
  between = { active: 0, idle: 0 };
  private lastExit: ReturnType<typeof performance.eventLoopUtilization> | undefined;
  private readonly gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) this.gcPauses.push({ start: entry.startTime, end: entry.startTime + entry.duration });
  });
  private detach: (() => void) | undefined;

  constructor(private readonly endpoints: EmulatorEndpoints) {}

  /** Forgets what was recorded: a new run starts. */
  reset(): void {
    this.invocations = [];
    this.requests = [];
    this.modelCalls = [];
    this.gcPauses = [];
    this.between = { active: 0, idle: 0 };
    this.lastExit = undefined;
    this.unread.clear();
  }

  /**
   * The stack's `wrapHandler`: times the handler and, once attached, names its function for the
   * requests it makes. Unattached it only times: an async context makes Node 20 turn promise hooks
   * on for the whole process, which costs about a millisecond an iteration, so the wall times are
   * measured in a run before any is made.
   */
  readonly wrapHandler = (fn: string, handler: LocalHandler): LocalHandler => async (event) => {
    const start = performance.now();
    if (this.lastExit) {
      const { active, idle } = performance.eventLoopUtilization(this.lastExit);
      this.between.active += active;
      this.between.idle += idle;
    }
    let bound = false;
    try {
      const result = await (this.detach ? this.context.run(fn, () => handler(event)) : handler(event));
      bound = fn === 'inference' && typeof result === 'object' && result !== null && !('seq' in result);
      return result;
    } finally {
      this.invocations.push({ fn, start, end: performance.now(), ...(bound ? { bound } : {}) });
      this.lastExit = performance.eventLoopUtilization();
    }
  };

  /** The stack's `aroundApi`: the API function's requests are attributed to it. */
  readonly aroundApi = <T>(work: () => T): T => (this.detach ? this.context.run('api', work) : work());

  /**
   * Starts recording: HTTP requests, GC pauses, and the calls of `generate` on `model` (the
   * scripted provider's prototype: the handlers build their own provider when they load).
   */
  attach(model: Pick<ModelProvider, 'generate'>): void {
    const onStart = (message: unknown) => this.sent((message as { request: ClientRequest }).request);
    const onReceived = (message: unknown) => {
      const { request, socket } = message as { request: IncomingMessage; socket: Socket };
      this.received(request, socket);
    };
    subscribe('http.client.request.start', onStart);
    subscribe('http.server.request.start', onReceived);
    this.gc.observe({ entryTypes: ['gc'] });
    const generate = model.generate;
    const calls = () => this.modelCalls;
    model.generate = async function timed(this: ModelProvider, request) {
      const start = performance.now();
      try {
        return await generate.call(this, request);
      } finally {
        calls().push({ start, end: performance.now() });
      }
    };
    this.detach = () => {
      unsubscribe('http.client.request.start', onStart);
      unsubscribe('http.server.request.start', onReceived);
      this.gc.disconnect();
      model.generate = generate;
    };
  }

  /** Stops recording; the provider's `generate` is the original again. */
  close(): void {
    this.detach?.();
    this.detach = undefined;
  }

  private sent(request: ClientRequest): void {
    const start = performance.now();
    const port = String(request.getHeader('host') ?? '').split(':')[1];
    const service: Service = port === portOf(this.endpoints.dynamo()) ? 'DynamoDB' : port === portOf(this.endpoints.s3()) ? 'S3' : 'other';
    // DynamoDB and the other AWS JSON APIs name the operation in a header; S3 in the method and path.
    const target = String(request.getHeader('x-amz-target') ?? '').split('.')[1];
    const span: RequestSpan = {
      fn: this.context.getStore() ?? orchestrator,
      service,
      operation: target ?? request.method,
      family: request.path,
      start,
      end: start,
      sent: Number(request.getHeader('content-length') ?? 0),
      received: 0,
    };
    if (service === 'S3') Object.assign(span, s3Target(request.method, request.path));
    // The body is on its way by now: its key is read where dynalite receives it.
    if (service === 'DynamoDB') this.unread.set(request, span);
    const finish = () => {
      if (span.end === start) span.end = performance.now();
    };
    request.once('response', (response: IncomingMessage) => {
      span.received = Number(response.headers['content-length'] ?? 0);
      response.once('end', finish);
      response.once('close', finish);
    });
    request.once('error', finish);
    this.requests.push(span);
  }

  /**
   * A request the in-process dynalite receives: the client request whose socket's local port is
   * this socket's remote port (a socket carries one request at a time). Its body names the key.
   */
  private received(request: IncomingMessage, socket: Socket): void {
    if (String(socket.localPort) !== portOf(this.endpoints.dynamo())) return;
    const client = [...this.unread.keys()].find((c) => c.socket?.localPort === socket.remotePort);
    const span = client && this.unread.get(client);
    if (!client || !span) return;
    this.unread.delete(client);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    // Kept as it is: parsing it now would count as the request's time.
    request.once('end', () => {
      span.body = Buffer.concat(chunks).toString('utf8');
    });
  }
}

/** A key with its numbers (sequence numbers, indexes) as a placeholder. */
const shape = (key: string) => key.replace(/\d{4,}/g, '<n>');

/**
 * What a DynamoDB request (its JSON body) touches: the item family of its partition key
 * (`conv#`, `run#`, … as `functions/adapters/dynamo/layout.ts` names them), the index if any,
 * and the shape of its sort key or sort key condition.
 */
export function dynamoTarget(body: string): string {
  type Value = { S?: string };
  const request = JSON.parse(body) as {
    Key?: Record<string, Value>;
    Item?: Record<string, Value>;
    IndexName?: string;
    KeyConditionExpression?: string;
    ExpressionAttributeValues?: Record<string, Value>;
  };
  const keys = request.Key ?? request.Item;
  const values = request.ExpressionAttributeValues ?? {};
  let pk = keys?.pk?.S;
  let sk = keys?.sk?.S === undefined ? undefined : shape(keys.sk.S);
  if (request.KeyConditionExpression) {
    // `<partition key> = :value [AND <sort key condition>]`
    const [partition, range] = request.KeyConditionExpression.split(/ AND (.*)/s);
    pk = values[/:\w+/.exec(partition ?? '')?.[0] ?? '']?.S;
    sk = range?.replace(/:\w+/g, (name) => shape(values[name]?.S ?? name));
  }
  const family = Object.values(itemFamilies).find((prefix) => pk?.startsWith(prefix)) ?? `${pk?.split('#')[0] ?? '?'}#`;
  return [family, request.IndexName ? `index ${request.IndexName}` : undefined, sk].filter(Boolean).join(' ');
}

/** An S3 request's operation and key prefix (`workspaces/`, `conversations/`, …), path-style. */
export function s3Target(method: string, path: string): { operation: string; family: string } {
  const url = new URL(path, 'http://s3');
  const [, , ...key] = url.pathname.split('/');
  if (key.join('') === '') {
    return { operation: method === 'GET' ? 'ListObjectsV2' : `${method} bucket`, family: `${url.searchParams.get('prefix')?.split('/')[0] ?? ''}/` };
  }
  const operation = { GET: 'GetObject', HEAD: 'HeadObject', PUT: 'PutObject', DELETE: 'DeleteObject' }[method] ?? method;
  return { operation, family: `${decodeURIComponent(key[0] ?? '')}/` };
}

/** The time at least one of the spans was open (overlapping spans counted once). */
function covered(spans: Span[]): number {
  let total = 0;
  let open: Span | undefined;
  for (const span of [...spans].sort((a, b) => a.start - b.start)) {
    if (open && span.start <= open.end) open.end = Math.max(open.end, span.end);
    else {
      if (open) total += open.end - open.start;
      open = { ...span };
    }
  }
  return total + (open ? open.end - open.start : 0);
}

const sumOf = (spans: Span[]) => spans.reduce((n, s) => n + (s.end - s.start), 0);

export interface Phases {
  /** Iterations measured: the gaps between the first inference step's start and the last one's. */
  iterations: number;
  /** Mean wall ms of one. */
  wallMs: number;
  /** Mean ms per iteration of each phase; they add up to `wallMs`. */
  phases: { phase: string; ms: number }[];
  /** The share of the time between handler calls that the event loop was busy (not waiting). */
  busyBetween: number;
  /** Mean ms per iteration that garbage collection paused the process, inside whichever phase. */
  gcMs: number;
}

const serviceLabels: Record<Service, string> = {
  DynamoDB: 'DynamoDB requests (dynalite, in-process)',
  S3: 'S3 requests (s3rver, in a child process)',
  other: 'requests to other local endpoints',
};

/**
 * When each iteration began, in order: an iteration is an inference step; an invocation at a bound
 * of the loop (the hand-over to a fresh execution every 60 iterations) calls no model and is none.
 */
export function inferenceStarts(profile: Pick<IterationProfile, 'invocations'>): number[] {
  return profile.invocations.filter((i) => i.fn === 'inference' && !i.bound).map((i) => i.start).sort((a, b) => a - b);
}

/**
 * The mean iteration: what started between the first inference step's start and the last one's,
 * per iteration. A handler's own time is its call less the requests and model calls it made.
 */
export function phasesOf(profile: IterationProfile): Phases {
  const starts = inferenceStarts(profile);
  const from = starts[0] ?? 0;
  const to = starts.at(-1) ?? 0;
  const iterations = Math.max(1, starts.length - 1);
  const within = <T extends Span>(spans: T[]) => spans.filter((s) => s.start >= from && s.start < to);
  const handlers = within(profile.invocations);
  const requests = within(profile.requests);
  const modelCalls = within(profile.modelCalls);
  const inside = (h: Invocation) => <T extends Span>(spans: T[]) => spans.filter((s) => s.start >= h.start && s.start <= h.end);
  const own = new Map<string, number>();
  const madeByHandlers = new Set<RequestSpan>();
  for (const h of handlers) {
    const made = inside(h);
    const mine = made(requests).filter((r) => r.fn === h.fn);
    for (const request of mine) madeByHandlers.add(request);
    const waited = covered(mine) + sumOf(made(modelCalls));
    own.set(h.fn, (own.get(h.fn) ?? 0) + (h.end - h.start) - waited);
  }
  const handlerMs = sumOf(handlers);
  const services: Service[] = ['DynamoDB', 'S3', 'other'];
  const byService = services.map((service) => ({ service, ms: covered(requests.filter((r) => r.service === service)) }));
  // Requests outside handlers (the API's, the orchestrator's) are not in a handler's time.
  const outsideHandlers = covered(requests.filter((r) => !madeByHandlers.has(r)));
  const per = (ms: number) => ms / iterations;
  const wall = to - from;
  const phases = [
    { phase: 'interpreter (ASL interpreter and local runtime between states)', ms: per(wall - handlerMs - outsideHandlers) },
    ...[...own].map(([fn, ms]) => ({ phase: `Lambda invoke: ${fn} (handler code, SDK serialization and signing)`, ms: per(ms) })),
    // Requests to other endpoints get a row only when there were some.
    ...byService.filter(({ service, ms }) => service !== 'other' || ms > 0).map(({ service, ms }) => ({ phase: serviceLabels[service], ms: per(ms) })),
    { phase: 'model client (scripted generate)', ms: per(sumOf(modelCalls)) },
  ];
  const { active, idle } = profile.between;
  return {
    iterations,
    wallMs: per(wall),
    phases,
    busyBetween: active + idle > 0 ? active / (active + idle) : 0,
    gcMs: per(covered(within(profile.gcPauses))),
  };
}

/** Requests of one kind: the function that made them, the operation, and what it touched. */
export interface RequestKind {
  fn: string;
  service: Service;
  operation: string;
  family: string;
  count: number;
  /** Mean client-side ms and body bytes of one. */
  ms: number;
  sent: number;
  received: number;
}

/** The recorded requests by kind, most frequent first. */
export function requestKinds(profile: IterationProfile): RequestKind[] {
  const kinds = new Map<string, { kind: RequestKind; spans: RequestSpan[] }>();
  for (const span of profile.requests) {
    const { fn, service, operation } = span;
    const family = span.body === undefined ? span.family : dynamoTarget(span.body);
    const id = [fn, service, operation, family].join('\u0000');
    const entry = kinds.get(id) ?? { kind: { fn, service, operation, family, count: 0, ms: 0, sent: 0, received: 0 }, spans: [] };
    entry.spans.push(span);
    kinds.set(id, entry);
  }
  return [...kinds.values()]
    .map(({ kind, spans }) => {
      const mean = (f: (s: RequestSpan) => number) => spans.reduce((n, s) => n + f(s), 0) / spans.length;
      return { ...kind, count: spans.length, ms: mean((s) => s.end - s.start), sent: mean((s) => s.sent), received: mean((s) => s.received) };
    })
    .sort((a, b) => b.count - a.count || a.fn.localeCompare(b.fn) || a.operation.localeCompare(b.operation) || a.family.localeCompare(b.family));
}
