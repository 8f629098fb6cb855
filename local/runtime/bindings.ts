/**
 * The service bindings: each Task of a definition, by its resource ARN, is bound to a local
 * stand-in for the service it calls: a Lambda handler module in-process (`lambda:invoke`, with
 * or without `.waitForTaskToken`), the DynamoDB emulator, a nested local execution
 * (`states:startExecution[.sync[:2]]`) or the local event bus (`events:putEvents`). A Task with
 * no binding fails loudly when its state machine is bound, not when a run reaches it.
 */
import {
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { LocalStateMachine } from '../definitions.js';
import { TaskError, failureOf } from './errors.js';
import type { LocalEventBus, PutEventsEntry } from './event-bus.js';
import { itemReaderResource } from './distributed-map.js';
import type { Bindings, LocalExecution, TaskHandlers } from './types.js';
import type { TaskTokens } from './task-tokens.js';

/** A Lambda handler as the runtime calls it. */
export type LocalHandler = (event: unknown) => Promise<unknown>;

/** What the bindings call. */
export interface BindingTargets {
  /** The handler of each function ARN. */
  functions: ReadonlyMap<string, LocalHandler>;
  dynamo: DynamoDBClient;
  tokens: TaskTokens;
  bus: LocalEventBus;
  /** Reads an object of the local bucket as text: the items a Map reads (`distributed-map.ts`). */
  readObject?: (bucket: string, key: string) => Promise<string>;
  /** Nested executions: started, and waited for by the `.sync` integrations. */
  executions: {
    start(stateMachineArn: string, name: string | undefined, input: string): LocalExecution;
    wait(executionArn: string): Promise<LocalExecution>;
  };
}

/** A local handler for every Task of the definition, chosen by its resource ARN. */
export function bindTasks(local: LocalStateMachine, targets: BindingTargets): Bindings {
  const handlers: TaskHandlers = {};
  const retryable: string[] = [];
  walk(local.definition, (name, state) => {
    if (Array.isArray(state.Retry)) retryable.push(name);
    if (state.Type !== 'Task') return;
    const resource = String(state.Resource);
    handlers[name] = binding(targets, resource, state, `${local.logicalId}.${name}`) as TaskHandlers[string];
  });
  return { handlers, retryable };
}

function binding(
  targets: BindingTargets,
  resource: string,
  state: Record<string, unknown>,
  where: string,
): (input: unknown) => Promise<unknown> {
  const parameters = (state.Parameters ?? {}) as Record<string, unknown>;
  const direct = targets.functions.get(resource);
  if (direct) {
    // A Task whose resource is the function itself: the input is the event, the result the payload.
    return (input) => invokeLocal(direct, input);
  }
  const service = resource.replace(/^arn:aws:states:::/, '');
  switch (service) {
    case 'lambda:invoke': {
      const handler = targets.functions.get(String(parameters.FunctionName));
      if (!handler) throw new Error(`${where}: no local function for ${String(parameters.FunctionName)}.`);
      return async (input) => {
        const { Payload } = input as { Payload: unknown };
        return { StatusCode: 200, ExecutedVersion: '$LATEST', Payload: await invokeLocal(handler, Payload) };
      };
    }
    case 'lambda:invoke.waitForTaskToken': {
      const handler = targets.functions.get(String(parameters.FunctionName));
      if (!handler) throw new Error(`${where}: no local function for ${String(parameters.FunctionName)}.`);
      const { tokens } = targets;
      return async (input) => {
        const { Payload } = input as { Payload: unknown };
        const claimed = tokens.claim(Payload);
        if (!claimed) throw new TaskError('States.Runtime', `${where}: the payload of a .waitForTaskToken task must carry $$.Task.Token.`);
        // Wait first: an answer may come before the function returns.
        const answered = tokens.waitOn(claimed.token, claimed.executionArn, state);
        try {
          await invokeLocal(handler, Payload);
        } catch (error) {
          tokens.abort(claimed.token, error as Error);
          throw error;
        }
        // The task's result is the output of SendTaskSuccess, not the function's answer.
        return answered;
      };
    }
    case 'dynamodb:updateItem':
    case 'dynamodb:putItem':
    case 'dynamodb:getItem':
    case 'dynamodb:deleteItem': {
      const { dynamo } = targets;
      // The task's parameters are the API call's input, as Step Functions passes them.
      const call = {
        'dynamodb:updateItem': (input: never) => dynamo.send(new UpdateItemCommand(input)),
        'dynamodb:putItem': (input: never) => dynamo.send(new PutItemCommand(input)),
        'dynamodb:getItem': (input: never) => dynamo.send(new GetItemCommand(input)),
        'dynamodb:deleteItem': (input: never) => dynamo.send(new DeleteItemCommand(input)),
      }[service];
      return async (input) => {
        try {
          const { $metadata: _metadata, ...output } = await call(input as never);
          return output as unknown;
        } catch (error) {
          const { name, message } = failureOf(error);
          throw new TaskError(`DynamoDB.${name}`, message);
        }
      };
    }
    case 'states:startExecution.sync:2':
    case 'states:startExecution.sync':
    case 'states:startExecution': {
      const { executions } = targets;
      return async (input) => {
        const { StateMachineArn, Name, Input } = input as { StateMachineArn: string; Name?: string; Input?: unknown };
        const child = executions.start(StateMachineArn, Name, typeof Input === 'string' ? Input : JSON.stringify(Input ?? {}));
        if (service === 'states:startExecution') return { ExecutionArn: child.executionArn, StartDate: child.startDate.toISOString() };
        const done = await executions.wait(child.executionArn);
        const description = describeForTask(done, service.endsWith(':2'));
        if (done.status !== 'SUCCEEDED') throw new TaskError('States.TaskFailed', JSON.stringify(description));
        return description;
      };
    }
    case itemReaderResource.replace(/^arn:aws:states:::/, ''): {
      const { readObject } = targets;
      if (!readObject) throw new Error(`${where}: the local runtime reads no Map items without its bucket.`);
      return async (input) => {
        const { Bucket, Key } = input as { Bucket: string; Key: string };
        try {
          return JSON.parse(await readObject(Bucket, Key)) as unknown;
        } catch (error) {
          const { name, message } = failureOf(error);
          throw new TaskError('States.ItemReaderFailed', `${name}: ${message}`);
        }
      };
    }
    case 'events:putEvents': {
      const { bus } = targets;
      return async (input) => {
        const { Entries } = input as { Entries: PutEventsEntry[] };
        const ids = bus.put(Entries);
        return { Entries: ids.map((EventId) => ({ EventId })), FailedEntryCount: 0 };
      };
    }
    default:
      throw new Error(`${where}: the local runtime has no binding for ${resource}.`);
  }
}

/**
 * Calls a handler as Lambda would: the event and the result pass through JSON, and a thrown
 * error becomes the task's error, named after the error, with Lambda's JSON cause.
 */
async function invokeLocal(handler: LocalHandler, event: unknown): Promise<unknown> {
  try {
    const result = await handler(JSON.parse(JSON.stringify(event ?? null)));
    return JSON.parse(JSON.stringify(result ?? null));
  } catch (error) {
    const { name, message } = failureOf(error);
    // The Node.js Lambda runtime's error document, keys in its order.
    throw new TaskError(name, JSON.stringify({ errorType: name, errorMessage: message, trace: [] }));
  }
}

/** Visits every state, inside Map and Parallel states too. */
function walk(definition: Record<string, unknown>, visit: (name: string, state: Record<string, unknown>) => void): void {
  const states = (definition.States ?? {}) as Record<string, Record<string, unknown>>;
  for (const [name, state] of Object.entries(states)) {
    visit(name, state);
    const processor = (state.ItemProcessor ?? state.Iterator) as Record<string, unknown> | undefined;
    if (processor) walk(processor, visit);
    for (const branch of (state.Branches ?? []) as Record<string, unknown>[]) walk(branch, visit);
  }
}

/** DescribeExecution's answer as a `.sync` task returns it (`.sync:2` parses the output). */
function describeForTask(execution: LocalExecution, parsed: boolean): Record<string, unknown> {
  return {
    ExecutionArn: execution.executionArn,
    StateMachineArn: execution.stateMachineArn,
    Name: execution.name,
    Status: execution.status,
    StartDate: execution.startDate.getTime(),
    StopDate: (execution.stopDate ?? new Date()).getTime(),
    Input: parsed ? JSON.parse(execution.input) : execution.input,
    ...(execution.output !== undefined ? { Output: parsed ? JSON.parse(execution.output) : execution.output } : {}),
    ...(execution.error !== undefined ? { Error: execution.error } : {}),
    ...(execution.cause !== undefined ? { Cause: execution.cause } : {}),
  };
}
