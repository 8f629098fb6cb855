/**
 * A2A in `npm run bench` (docs/a2a.md): what the A2A layer adds over the run routes it calls
 * in-process, on the local server with the SDK's own client: `GetTask` against `GET /runs/{runId}`,
 * and a blocking `SendMessage` of a one-turn run against `POST /runs` and following its events to
 * the end. Printed, not asserted. Runs as a process of its own (`npx tsx test/bench/a2a.ts`).
 */
import { Role, type SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { say } from '../support/agents.js';
import { startFixture } from '../support/local-stack.js';
import { row } from './table.js';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

async function timed(times: number, call: (i: number) => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await call(i);
    ms.push(performance.now() - started);
  }
  return median(ms);
}

const request = (text: string): SendMessageRequest => ({
  tenant: '',
  metadata: undefined,
  message: {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
});

const local = await startFixture();
try {
  const client = await new ClientFactory().createFromUrl(local.stack.url);
  const runs = 10;
  const sends = await timed(runs, async (i) => client.sendMessage(request(`${local.book.add(`a2a-${i}`, { turn: say('Done.') })} Say done.`)));
  const routes = await timed(runs, async (i) => {
    const tag = local.book.add(`http-${i}`, { turn: say('Done.') });
    const res = await fetch(`${local.stack.url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ goal: `${tag} Say done.`, mode: 'single' }) });
    const { runId } = (await res.json()) as { runId: string };
    // Followed to its end as the A2A handler follows it: the run's event stream.
    await (await fetch(`${local.stack.url}/runs/${runId}/events`)).text();
  });
  const tag = local.book.add('a2a-get', { turn: say('Done.') });
  const task = await client.sendMessage(request(`${tag} Say done.`));
  const id = 'id' in task ? task.id : '';
  const gets = 50;
  const getTask = await timed(gets, () => client.getTask({ tenant: '', id, historyLength: undefined }));
  const getRun = await timed(gets, async () => (await fetch(`${local.stack.url}/runs/${id}`)).json());

  console.log(`\n## A2A over the run routes (local server, the SDK's client; medians)\n`);
  console.log(row(['measure', 'A2A ms', 'run routes ms', 'A2A adds ms']));
  console.log(row(['---', '---', '---', '---']));
  console.log(row([`a one-turn run to its end (${runs} runs): SendMessage against POST /runs and its event stream`, sends.toFixed(1), routes.toFixed(1), (sends - routes).toFixed(1)]));
  console.log(row([`a task read (${gets} reads): GetTask against GET /runs/{runId}`, getTask.toFixed(1), getRun.toFixed(1), (getTask - getRun).toFixed(1)]));
} finally {
  await local.close();
}
