/**
 * The docs' examples offline, through the local stack and the offline model as `npm run dev`
 * serves it without a key (the real SDK against the local Messages API): structured output, a
 * fork of a session's second turn, a denied write, a run slow enough to cancel, and the scripts a
 * goal's `[script:<name>]` tag replays, all on one server.
 */
import { describe, expect, it } from 'vitest';
import type { Run } from '../../functions/core/runs/types.js';
import { offlineResponder } from '../../local/offline/model.js';
import type { WireRequest } from '../../local/stand-ins/messages-api.js';
import { useLocalStack } from '../support/local-stack.js';

// At once, but for goals marked [[slow]]: those are written at a model's pace, to be watched and cancelled.
const instant = offlineResponder({ charsPerSecond: 0 });
const paced = offlineResponder({ charsPerSecond: 60 });
const local = useLocalStack(
  { STEPWISE_MODEL: 'stepwise-offline' },
  { respond: (body: WireRequest, n: number) => (JSON.stringify(body.messages).includes('[[slow]]') ? paced(body, n) : instant(body, n)) },
);

const productSchema = { type: 'object', properties: { product: { type: 'integer' } }, required: ['product'] };
const someNumber = () => 100 + Math.floor(Math.random() * 9_000);

async function started(body: Record<string, unknown>): Promise<string> {
  const res = await local.post('/runs', { mode: 'single', ...body });
  expect(res.status).toBe(202);
  return String(res.body.runId);
}

describe('structured output offline', () => {
  it("answers the documented example, and the same with other numbers, with the product in result.output", async () => {
    for (const [a, b] of [
      [1234, 5678],
      [someNumber(), someNumber()],
    ] as const) {
      const run = await local.run(`What is ${a} times ${b}?`, { budget: { maxUsd: 0.25 }, output: { schema: productSchema } });
      expect(run).toMatchObject({ status: 'succeeded', budget: { maxUsd: 0.25 }, result: { response: `${a} × ${b} = ${(a * b).toLocaleString('en-US')}.`, output: { product: a * b } } });
    }
  });

  it('replays local/scripts/structured-output.json for a goal tagged [script:structured-output]', async () => {
    const run = await local.run('[script:structured-output] What is 1234 times 5678?', { output: { schema: productSchema } });
    expect(run).toMatchObject({ status: 'succeeded', result: { output: { product: 7006652 } } });
  });
});

describe('a fork of a session offline', () => {
  /** The seq of the run's own opening message (its goal), as `stepwise messages` shows it. */
  async function openingSeq(runId: string): Promise<number> {
    const { items } = (await local.get(`/runs/${runId}/messages`)).body as { items: { seq: number; role: string; content: { type: string }[] }[] };
    const opening = items.find((m) => m.role === 'user' && m.content.some((b) => b.type === 'text'));
    if (!opening) throw new Error(`Run ${runId} has no opening message.`);
    return opening.seq;
  }

  it("forks the session's second turn with a new goal, keeping the first turn's answer in view", async () => {
    const sessionId = `fork-demo-${someNumber()}`;
    const [a, b, c, d] = [someNumber(), someNumber(), someNumber(), someNumber()];
    const first = await local.run(`What is ${a} times ${b}?`, { sessionId });
    const second = await local.run(`Now add ${c} to it.`, { sessionId });
    expect([first.result?.response, second.result?.response]).toEqual([
      `${a} × ${b} = ${(a * b).toLocaleString('en-US')}.`,
      `${a * b} + ${c} = ${(a * b + c).toLocaleString('en-US')}.`,
    ]);

    const fromSeq = await openingSeq(second.runId);
    expect(fromSeq).toBeGreaterThan(0);
    const fork = await local.post(`/runs/${second.runId}/fork`, { fromSeq, goal: `Now subtract ${d} from it.` });
    expect(fork.status).toBe(202);
    const forked = await local.waitFor(String(fork.body.runId));
    expect(forked).toMatchObject({
      status: 'succeeded',
      forkedFrom: { runId: second.runId, agent: 'single', seq: fromSeq },
      result: { response: `${a * b} - ${d} = ${(a * b - d).toLocaleString('en-US')}.` },
    });
  });

  it('replays local/scripts/fork.json per user turn: the second turn, and a fork that retries it, get its turns', async () => {
    const sessionId = `fork-script-${someNumber()}`;
    const first = await local.run('[script:fork] What is 6 times 7?', { sessionId });
    const second = await local.run('[script:fork] Now add 8 to it.', { sessionId });
    const retry = await local.post(`/runs/${second.runId}/fork`, { fromSeq: await openingSeq(second.runId) });
    const forked = await local.waitFor(String(retry.body.runId));
    expect([first, second, forked].map((run) => run.result?.response)).toEqual(['6 × 7 = 42.', '42 + 8 = 50.', '42 + 8 = 50.']);
  });
});

describe('approvals offline', () => {
  it('does not claim a write the reviewer denied', async () => {
    const runId = await started({ goal: 'What is 1234 times 5678? Save the answer to answer.md.', approvals: { tools: ['write_file'] } });
    const waiting = await local.waitingOn(runId, 1);
    const call = waiting.waitingFor[0];
    expect(call).toMatchObject({ name: 'write_file', input: { path: 'answer.md' } });
    const denied = await local.post(`/runs/${runId}/approvals/${call?.toolUseId}`, { decision: 'deny', reason: 'print the answer instead' });
    expect(denied.status).toBe(202);
    const run = await local.waitFor(runId);
    expect(run.result?.response).toBe('1234 × 5678 = 7,006,652. I did not save it to answer.md: a reviewer denied the write (print the answer instead).');
    expect((await local.get(`/runs/${runId}/files`)).body.items).toEqual([]);
  });
});

describe('a paced offline run', () => {
  it('is still running when the cancel comes, so the documented cancel answers 202 and the run ends cancelled', async () => {
    const runId = await started({ goal: '[[slow]] What is 2 + 3 * 4 - 10 / 5? Save the answer to answer.md.' });
    await new Promise((r) => setTimeout(r, 500));
    expect(((await local.get(`/runs/${runId}`)).body as unknown as Run).status).toBe('running');
    expect((await local.post(`/runs/${runId}/cancel`, {})).status).toBe(202);
    expect((await local.waitFor(runId)).status).toBe('cancelled');
  });
});
