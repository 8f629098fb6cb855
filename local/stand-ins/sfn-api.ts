/**
 * The Step Functions API on loopback, for the real `SFNClient`: `POST /` with
 * `X-Amz-Target: AWSStepFunctions.<Operation>` and JSON 1.0 bodies, answered by the local runtime.
 */
import type { LocalExecution, LocalRuntime } from '../runtime/runtime.js';
import { startLoopbackServer } from './http-server.js';

const epochSeconds = (d: Date | undefined) => (d ? d.getTime() / 1000 : undefined);

function describe(e: LocalExecution): Record<string, unknown> {
  return {
    executionArn: e.executionArn,
    stateMachineArn: e.stateMachineArn,
    name: e.name,
    status: e.status,
    startDate: epochSeconds(e.startDate),
    stopDate: epochSeconds(e.stopDate),
    input: e.input,
    output: e.output,
    error: e.error,
    cause: e.cause,
  };
}

type Operation = (body: Record<string, unknown>) => Record<string, unknown>;

export function sfnOperations(runtime: LocalRuntime): Record<string, Operation> {
  return {
    StartExecution: (b) => {
      const e = runtime.start(String(b.stateMachineArn), b.name ? String(b.name) : undefined, String(b.input ?? '{}'));
      return { executionArn: e.executionArn, startDate: epochSeconds(e.startDate) };
    },
    DescribeExecution: (b) => describe(runtime.describe(String(b.executionArn))),
    StopExecution: (b) => {
      const e = runtime.stop(String(b.executionArn), b.error as string | undefined, b.cause as string | undefined);
      return { stopDate: epochSeconds(e.stopDate ?? new Date()) };
    },
    SendTaskSuccess: (b) => {
      runtime.sendTaskSuccess(String(b.taskToken), String(b.output));
      return {};
    },
    SendTaskFailure: (b) => {
      runtime.sendTaskFailure(String(b.taskToken), b.error as string | undefined, b.cause as string | undefined);
      return {};
    },
    SendTaskHeartbeat: (b) => {
      runtime.sendTaskHeartbeat(String(b.taskToken));
      return {};
    },
  };
}

export async function startSfnApi(runtime: LocalRuntime, port = 0): Promise<{ url: string; close(): Promise<void> }> {
  const operations = sfnOperations(runtime);
  const server = await startLoopbackServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      const operation = operations[target.replace(/^AWSStepFunctions\./, '')];
      const reply = (status: number, body: unknown) => {
        const text = JSON.stringify(body);
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      if (!operation) {
        reply(400, { __type: 'UnknownOperationException', message: `The local runtime does not answer ${target}.` });
        return;
      }
      try {
        const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : {};
        reply(200, operation(body));
      } catch (error) {
        const name = error instanceof Error ? error.name : 'InternalError';
        const message = error instanceof Error ? error.message : String(error);
        reply(400, { __type: name, message });
      }
    });
  }, port);
  return { url: server.url, close: server.close };
}
