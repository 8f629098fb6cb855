/**
 * Traces at the step pipeline's hook points (docs/traces.md): a `chat` span around each model
 * call an inference step makes, an `execute_tool` span for each tool call a tool step runs. A
 * retried step that finds its answer or result stored calls nothing, and so describes nothing:
 * a span's usage is never sent twice. Nothing is described when the deployment has no tracer.
 */
import { childRunIdOf } from '../children/children.js';
import { modelMessages } from '../compaction/context.js';
import { runTrace } from '../runs/controls.js';
import type { InferenceFeature, ModelCall, ToolFeature } from '../steps/hooks.js';
import type { ToolInput } from '../steps/types.js';
import { endedRunSpans } from './run-ended.js';
import { chatSpan, toolSpan } from './spans.js';

/** The model calls each step has made so far (a retry after "prompt is too long" is its second). */
const callsOf = new WeakMap<ModelCall, number>();

/** A `chat` span for every model call of the answer, failed calls included (with their error). */
export const tracesFeature: InferenceFeature = {
  name: 'traces',
  async aroundModel(call, next) {
    const traces = call.deps.traces;
    const trace = call.run?.trace;
    if (!traces?.tracer.enabled || !trace?.sampled) return next();
    const { input } = call;
    const index = callsOf.get(call) ?? 0;
    callsOf.set(call, index + 1);
    const clock = call.deps.clock ?? (() => new Date());
    const startTime = clock();
    const base = {
      runId: input.runId,
      agent: input.agent,
      iteration: input.iteration,
      call: index,
      conversationId: call.conversationId,
      provider: traces.provider,
      requestModel: call.model,
      maxTokens: call.maxTokens,
      startTime,
      ...(traces.tracer.captureContent ? { input: [{ role: 'system', content: call.request.system }, ...modelMessages(call.conversation)] } : {}),
    };
    try {
      const response = await next();
      const { model, stopReason, usage, message } = response;
      traces.tracer.emit(chatSpan(trace, { ...base, endTime: clock(), response: { model, stopReason, usage, content: message.content } }, traces.tracer.captureContent));
      return response;
    } catch (error) {
      traces.tracer.emit(chatSpan(trace, { ...base, endTime: clock(), error }, traces.tracer.captureContent));
      throw error;
    }
  },
};

/** When each tool call of this process began, by its step's input. */
const startedAt = new WeakMap<ToolInput, Date>();

/** An `execute_tool` span for every tool call the step answers (a denied call too: it did not run, and says so). */
export const tracesToolFeature: ToolFeature = {
  name: 'traces',
  async beforeTool(call) {
    if (call.deps.traces?.tracer.enabled) startedAt.set(call.input, (call.deps.clock ?? (() => new Date()))());
  },
  async afterTool(outcome) {
    const { deps, input } = outcome;
    const traces = deps.traces;
    const startTime = startedAt.get(input);
    if (!traces?.tracer.enabled || !startTime || !deps.runs) return;
    startedAt.delete(input);
    const trace = await runTrace(input.runId, deps.runs);
    if (!trace?.sampled) return;
    const type = outcome.from?.kind === 'external' ? 'extension' : 'function';
    // A call of an agent: its child run began at the step that made it, and has ended by now.
    const child = outcome.from?.kind === 'agent' ? await quietly(() => deps.runs?.get(childRunIdOf(input.runId, outcome.call.id))) : undefined;
    traces.tracer.emit(
      toolSpan(
        trace,
        {
          runId: input.runId,
          agent: input.agent,
          toolUseId: outcome.call.id,
          tool: outcome.call.name,
          type,
          // The call's span holds its child's: it began when the child was made.
          startTime: child && Date.parse(child.createdAt) < startTime.getTime() ? new Date(child.createdAt) : startTime,
          endTime: (deps.clock ?? (() => new Date()))(),
          isError: outcome.result.is_error === true,
          output: outcome.result.content,
          input: outcome.call.input,
        },
        traces.tracer.captureContent,
      ),
    );
    // The child's own run and agent spans go now, under this call's span (no completion event is
    // sent for a child run).
    if (child?.trace?.sampled && child.status !== 'running') {
      const spans = await quietly(() => endedRunSpans(child, { conversations: deps.conversations, traces }));
      for (const span of spans ?? []) traces.tracer.emit(span);
    }
  },
};

/** What `read` answers, or undefined when it fails: describing spans never fails a step (the failure is logged). */
async function quietly<T>(read: () => Promise<T> | undefined): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    console.warn(JSON.stringify({ level: 'warn', message: 'Spans of a child run not described', error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }));
    return undefined;
  }
}
