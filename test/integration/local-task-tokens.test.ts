import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SFNClient, SendTaskFailureCommand, SendTaskSuccessCommand, TaskTimedOut } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localCredentials } from '../../functions/wiring/wire.js';
import { localRegion } from '../../local/stand-ins/emulators.js';
import { InvalidOutput, InvalidToken, type LocalExecution, LocalRuntime } from '../../local/runtime/runtime.js';
import { startSfnApi } from '../../local/stand-ins/sfn-api.js';

const fnArn = `arn:aws:lambda:${localRegion}:000000000000:function:Waiter`;
const received: { token: string; attempt: number }[] = [];
let failNext = false;

/** A machine with one `.waitForTaskToken` task; `wait` is the task's timing. */
function machine(name: string, wait: { TimeoutSeconds?: number; HeartbeatSeconds?: number }) {
  return {
    logicalId: name,
    arn: `arn:aws:states:${localRegion}:000000000000:stateMachine:${name}`,
    name,
    definition: {
      StartAt: 'Wait',
      States: {
        Wait: {
          Type: 'Task',
          Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
          Parameters: { FunctionName: fnArn, Payload: { 'token.$': '$$.Task.Token', 'attempt.$': '$.attempt' } },
          ...wait,
          Retry: [{ ErrorEquals: ['Flaky'], MaxAttempts: 1, IntervalSeconds: 1 }],
          End: true,
        },
      },
    },
  };
}

const runtime = new LocalRuntime({
  stateMachines: [machine('Long', { TimeoutSeconds: 30 }), machine('Short', { TimeoutSeconds: 1 }), machine('Beating', { TimeoutSeconds: 30, HeartbeatSeconds: 1 })],
  functions: [{ logicalId: 'Waiter', arn: fnArn, handler: 'waiter' }],
  handlers: {
    waiter: async (event) => {
      const { token, attempt } = event as { token: string; attempt: number };
      received.push({ token, attempt });
      if (failNext) {
        failNext = false;
        throw Object.assign(new Error('try again'), { name: 'Flaky' });
      }
      return { accepted: true };
    },
  },
  dynamo: new DynamoDBClient({ region: localRegion, credentials: localCredentials }),
  retryIntervalMs: 5,
});

let api: Awaited<ReturnType<typeof startSfnApi>>;
let sfn: SFNClient;
beforeAll(async () => {
  api = await startSfnApi(runtime);
  sfn = new SFNClient({ endpoint: api.url, region: localRegion, credentials: localCredentials, maxAttempts: 1 });
});
afterAll(async () => {
  runtime.abandonWaits();
  await runtime.idle();
  sfn.destroy();
  await api.close();
});

let n = 0;
/** Starts an execution and resolves with the token its task waits on. */
async function startWaiting(machineName: string): Promise<{ execution: LocalExecution; token: string }> {
  const attempt = ++n;
  const execution = runtime.start(runtime.stateMachineArn(machineName), `e-${attempt}`, JSON.stringify({ attempt }));
  for (let i = 0; i < 200; i++) {
    // Checked after a pause: a failed attempt's wait ends a moment after its function returns.
    await new Promise((r) => setTimeout(r, 10));
    const mine = received.filter((r) => r.attempt === attempt).at(-1);
    if (mine && runtime.waitingTokens().some((w) => w.token === mine.token)) return { execution, token: mine.token };
  }
  throw new Error('The task never waited.');
}

describe('.waitForTaskToken in the local runtime', () => {
  it('hands the task a token and succeeds with the output SendTaskSuccess sends through the API', async () => {
    const { execution, token } = await startWaiting('Long');
    expect(token).toMatch(/^AQ[A-Za-z0-9_-]{80,}$/);
    expect(runtime.waitingTokens()).toContainEqual({ token, executionArn: execution.executionArn });

    await sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify({ decision: 'approve' }) }));
    expect(await runtime.wait(execution.executionArn)).toMatchObject({ status: 'SUCCEEDED', output: '{"decision":"approve"}' });
    // The token is spent.
    await expect(sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' }))).rejects.toBeInstanceOf(TaskTimedOut);
  });

  it('fails the task with the error and cause of SendTaskFailure', async () => {
    const { execution, token } = await startWaiting('Long');
    await sfn.send(new SendTaskFailureCommand({ taskToken: token, error: 'ReviewDenied', cause: 'not today' }));
    expect(await runtime.wait(execution.executionArn)).toMatchObject({ status: 'FAILED', error: 'ReviewDenied', cause: 'not today' });
  });

  it('times out after TimeoutSeconds with States.Timeout, and the token is gone', async () => {
    const { execution, token } = await startWaiting('Short');
    expect(await runtime.wait(execution.executionArn)).toMatchObject({ status: 'FAILED', error: 'States.Timeout' });
    expect(() => runtime.sendTaskSuccess(token, '{}')).toThrow(/no longer waits/);
  });

  it('times out without a heartbeat within HeartbeatSeconds, and heartbeats keep it waiting', async () => {
    const { execution, token } = await startWaiting('Beating');
    const started = Date.now();
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 400));
      runtime.sendTaskHeartbeat(token);
    }
    expect(runtime.describe(execution.executionArn).status).toBe('RUNNING');
    expect(await runtime.wait(execution.executionArn)).toMatchObject({ status: 'FAILED', error: 'States.Timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
  });

  it('gives a retried task a fresh token; the first one no longer answers', async () => {
    failNext = true;
    const { execution, token } = await startWaiting('Long');
    const attempt = received.find((r) => r.token === token)?.attempt;
    const tokens = received.filter((r) => r.attempt === attempt).map((r) => r.token);
    expect(tokens).toHaveLength(2);
    expect(tokens[0]).not.toBe(tokens[1]);
    expect(() => runtime.sendTaskSuccess(String(tokens[0]), '{}')).toThrow(/no longer waits/);
    runtime.sendTaskSuccess(token, '{"second":true}');
    expect(await runtime.wait(execution.executionArn)).toMatchObject({ status: 'SUCCEEDED', output: '{"second":true}' });
  });

  it('ends the waits of a stopped execution', async () => {
    const { execution, token } = await startWaiting('Long');
    runtime.stop(execution.executionArn, 'Cancelled', 'by a test');
    expect(runtime.waitingTokens()).toEqual([]);
    expect(() => runtime.sendTaskSuccess(token, '{}')).toThrow(/no longer waits/);
    expect((await runtime.wait(execution.executionArn)).status).toBe('ABORTED');
  });

  it('refuses a token it never issued and an output that is not JSON', async () => {
    expect(() => runtime.sendTaskSuccess('not-a-token', '{}')).toThrow(InvalidToken);
    const { execution, token } = await startWaiting('Long');
    expect(() => runtime.sendTaskSuccess(token, '{oops')).toThrow(InvalidOutput);
    runtime.sendTaskSuccess(token, '"fine"');
    expect((await runtime.wait(execution.executionArn)).output).toBe('"fine"');
  });
});
