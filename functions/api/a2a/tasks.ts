/**
 * A2A tasks as Stepwise runs (docs/a2a.md): a task is a run, its id the run id, its context the
 * run's session. Pure: a run as `GET /runs/{runId}` answers it becomes a `Task`; a message becomes
 * a `POST /runs` body; the run's AG-UI events become A2A stream events (`TaskEvents`).
 */
import { type AGUIEvent, EventType } from '@ag-ui/core';
import { type Artifact, type Message, type Part, Role, type StreamResponse, type Task, TaskState, type TaskStatus } from '@a2a-js/sdk';
import { createHash } from 'node:crypto';
import * as z from 'zod';
import type { RunView } from '../schemas.js';

/** A run's status as a task state: a running run that waits for a reviewer needs input. */
export function stateOf(run: Pick<RunView, 'status' | 'waitingFor'>): TaskState {
  switch (run.status) {
    case 'running':
      return run.waitingFor.length > 0 ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_WORKING;
    case 'succeeded':
      return TaskState.TASK_STATE_COMPLETED;
    case 'failed':
      return TaskState.TASK_STATE_FAILED;
    case 'cancelled':
      return TaskState.TASK_STATE_CANCELED;
  }
}

/** The states after which a task changes no more. */
export const finalStates: readonly TaskState[] = [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED];

/** A text part. */
export const textPart = (text: string): Part => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });

/** A JSON part. */
export const dataPart = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });

/** The context of a run: its session, or the run itself when it has none (a workflow's). */
export const contextOf = (run: Pick<RunView, 'runId' | 'sessionId'>): string => run.sessionId ?? run.runId;

/** A message of the agent about a task. */
function agentMessage(run: Pick<RunView, 'runId' | 'sessionId'>, id: string, parts: Part[]): Message {
  return { messageId: `${run.runId}:${id}`, contextId: contextOf(run), taskId: run.runId, role: Role.ROLE_AGENT, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}

/** The calls a run waits on, as the message of an `input-required` status: what waits, and where a reviewer decides. */
export function waitingMessage(run: Pick<RunView, 'runId' | 'sessionId'>, waiting: Pick<RunView['waitingFor'][number], 'toolUseId' | 'name' | 'input'>[]): Message {
  const lines = waiting.map((w) => `${w.name} (${w.toolUseId})`).join(', ');
  return agentMessage(run, `waiting:${waiting.map((w) => w.toolUseId).join(',')}`, [
    textPart(`Waiting for a reviewer to approve or deny: ${lines}. A reviewer decides with POST /runs/${run.runId}/approvals/{toolUseId}.`),
    dataPart({ waitingFor: waiting.map((w) => ({ toolUseId: w.toolUseId, tool: w.name, input: w.input })) }),
  ]);
}

/** What a run that ended says: its answer, its error, or that it was cancelled. */
function endMessage(run: Pick<RunView, 'runId' | 'sessionId' | 'status' | 'result' | 'error'>): Message | undefined {
  if (run.status === 'succeeded' && run.result) return agentMessage(run, 'result', [textPart(run.result.response)]);
  if (run.status === 'failed') return agentMessage(run, 'error', [textPart(`${run.error?.code ?? 'RunFailed'}: ${run.error?.message ?? 'The run failed.'}`)]);
  if (run.status === 'cancelled') return agentMessage(run, 'cancelled', [textPart('The run was cancelled.')]);
  return undefined;
}

/** The answer of a run that succeeded, as the task's one artifact: the text, and the structured output when it asked for one. */
export function resultArtifact(result: NonNullable<RunView['result']>): Artifact {
  return {
    artifactId: 'result',
    name: 'result',
    description: "The run's final answer.",
    parts: [textPart(result.response), ...(result.output ? [dataPart(result.output)] : [])],
    metadata: { actionsTaken: result.actionsTaken },
    extensions: [],
  };
}

/** The status of a run, with the message that explains it (what waits, the answer, the error). */
export function statusOf(run: RunView): TaskStatus {
  const state = stateOf(run);
  const message = state === TaskState.TASK_STATE_INPUT_REQUIRED ? waitingMessage(run, run.waitingFor) : endMessage(run);
  return { state, message, timestamp: run.updatedAt };
}

/** The run as a task: its status, its answer as an artifact, the goal as the history, Stepwise's own fields as metadata. */
export function taskOf(run: RunView): Task {
  const goal: Message = { messageId: `${run.runId}:goal`, contextId: contextOf(run), taskId: run.runId, role: Role.ROLE_USER, parts: [textPart(run.goal)], metadata: undefined, extensions: [], referenceTaskIds: [] };
  return {
    id: run.runId,
    contextId: contextOf(run),
    status: statusOf(run),
    artifacts: run.status === 'succeeded' && run.result ? [resultArtifact(run.result)] : [],
    history: [goal],
    metadata: {
      stepwise: {
        runId: run.runId,
        status: run.status,
        phase: run.phase,
        ...(run.agent ? { agent: run.agent.name } : {}),
        ...(run.workflow ? { workflow: run.workflow.name } : {}),
        usage: run.usage,
        ...(run.estimatedCostUsd === undefined ? {} : { estimatedCostUsd: run.estimatedCostUsd }),
      },
    },
  };
}

/** What a message may say about the run besides its goal, in its metadata, the request's, or a data part. */
const RunChoice = z.object({ agent: z.string().optional(), workflow: z.string().optional() });

/** The `POST /runs` body a message asks for, and where a refusal of each of its fields points in the message. */
export interface RunRequest {
  body: { goal: string; sessionId?: string; agent?: string; workflow?: string; mode?: 'single' };
  /** The body's field → the message's field, for the refusal's issues. */
  fields: Record<string, string>;
}

/** The data parts of a message, as values. */
function dataOf(message: Message): unknown[] {
  return message.parts.flatMap((part) => (part.content?.$case === 'data' ? [part.content.value] : []));
}

/**
 * The run a message starts: its text parts are the goal; `agent` or `workflow` in the message's
 * metadata, the request's, or a data part picks what runs (the assistant when none does). The
 * context is the session: a message without one starts a new context, named after the message so
 * that a repeat of it names the same one; a workflow has no session, so it takes no context.
 */
export function runRequestOf(message: Message, requestMetadata: Record<string, unknown> | undefined): RunRequest {
  const choices = [message.metadata, requestMetadata, ...dataOf(message)].map((value) => RunChoice.safeParse(value ?? {}).data ?? {});
  const choice = Object.assign({}, ...choices) as z.infer<typeof RunChoice>;
  const goal = message.parts.flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : [])).join('\n');
  // Both named go to the route as they are, which refuses them (one of agent or workflow).
  const named = { ...(choice.agent === undefined ? {} : { agent: choice.agent }), ...(choice.workflow === undefined ? {} : { workflow: choice.workflow }) };
  const target = choice.agent === undefined && choice.workflow === undefined ? { mode: 'single' as const } : named;
  const fields = { goal: 'message.parts', sessionId: 'message.contextId', agent: 'metadata.agent', workflow: 'metadata.workflow', mode: 'metadata.agent' };
  if (choice.workflow !== undefined) return { body: { goal, ...target, ...(message.contextId ? { sessionId: message.contextId } : {}) }, fields };
  const sessionId = message.contextId || `a2a-${createHash('sha256').update(message.messageId).digest('hex').slice(0, 32)}`;
  return { body: { goal, ...target, sessionId }, fields };
}

/**
 * The A2A stream events of a run's AG-UI events, one event at a time: the text the agent writes as
 * artifact chunks (one artifact per message), tool calls and decisions as `working` status
 * updates, a call that waits for a reviewer as `input-required`, and the run's end as the answer's
 * artifact and the final status. Keeps which calls still wait, so a decision says `working` only
 * once none does.
 */
export class TaskEvents {
  private readonly waiting = new Map<string, { toolUseId: string; name: string; input: unknown }>();
  private readonly started = new Set<string>();
  /** The state of the last status sent. */
  state: TaskState = TaskState.TASK_STATE_WORKING;

  constructor(private readonly run: Pick<RunView, 'runId' | 'sessionId'>) {}

  /** The A2A events of one AG-UI event (none for most). */
  next(event: AGUIEvent): StreamResponse[] {
    switch (event.type) {
      case EventType.TEXT_MESSAGE_START:
        return [];
      case EventType.TEXT_MESSAGE_CONTENT: {
        const append = this.started.has(event.messageId);
        this.started.add(event.messageId);
        return [this.artifact({ artifactId: event.messageId, name: 'text', description: 'Text the agent wrote.', parts: [textPart(event.delta)], metadata: undefined, extensions: [] }, append, false)];
      }
      case EventType.TEXT_MESSAGE_END:
        return this.started.has(event.messageId)
          ? [this.artifact({ artifactId: event.messageId, name: 'text', description: 'Text the agent wrote.', parts: [textPart('')], metadata: undefined, extensions: [] }, true, true)]
          : [];
      case EventType.STEP_STARTED:
        return [this.status(TaskState.TASK_STATE_WORKING, undefined, { step: event.stepName })];
      case EventType.TOOL_CALL_START:
        return [this.status(this.waitingState(), undefined, { toolCall: { toolCallId: event.toolCallId, tool: event.toolCallName } })];
      case EventType.CUSTOM:
        return this.custom(event.name, event.value);
      default:
        return [];
    }
  }

  private custom(name: string, value: unknown): StreamResponse[] {
    const fields = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
    switch (name) {
      case 'stepwise.approval_requested': {
        const call = { toolUseId: String(fields.toolCallId), name: String(fields.tool), input: fields.input };
        this.waiting.set(call.toolUseId, call);
        return [this.status(TaskState.TASK_STATE_INPUT_REQUIRED, waitingMessage(this.run, [...this.waiting.values()]), { approvalRequested: fields })];
      }
      case 'stepwise.approval_decided':
        this.waiting.delete(String(fields.toolCallId));
        return [this.status(this.waitingState(), this.waiting.size ? waitingMessage(this.run, [...this.waiting.values()]) : undefined, { approvalDecided: fields })];
      case 'stepwise.tool_result':
        return [this.status(this.waitingState(), undefined, { toolResult: fields })];
      case 'stepwise.run_ended':
        return this.ended(fields);
      default:
        return [];
    }
  }

  /** The run's end: its answer as the result artifact, then the final status. */
  private ended(fields: Record<string, unknown>): StreamResponse[] {
    const ended = z.object({ status: z.enum(['running', 'succeeded', 'failed', 'cancelled']), result: z.looseObject({ response: z.string(), actionsTaken: z.array(z.string()) }).optional(), error: z.looseObject({ code: z.string(), message: z.string() }).optional() }).safeParse(fields);
    if (!ended.success) return [];
    const run = { ...this.run, status: ended.data.status, waitingFor: [], ...(ended.data.result ? { result: ended.data.result } : {}), ...(ended.data.error ? { error: ended.data.error } : {}) };
    this.waiting.clear();
    const answer = run.status === 'succeeded' && run.result ? [this.artifact(resultArtifact(run.result), false, true)] : [];
    return [...answer, this.status(stateOf(run), endMessage(run), { runEnded: fields })];
  }

  private waitingState(): TaskState {
    return this.waiting.size ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_WORKING;
  }

  private status(state: TaskState, message: Message | undefined, stepwise: Record<string, unknown>): StreamResponse {
    this.state = state;
    return {
      payload: { $case: 'statusUpdate', value: { taskId: this.run.runId, contextId: contextOf(this.run), status: { state, message, timestamp: new Date().toISOString() }, metadata: { stepwise } } },
    };
  }

  private artifact(artifact: Artifact, append: boolean, lastChunk: boolean): StreamResponse {
    return { payload: { $case: 'artifactUpdate', value: { taskId: this.run.runId, contextId: contextOf(this.run), artifact, append, lastChunk, metadata: undefined } } };
  }
}
