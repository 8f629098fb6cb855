/**
 * Forks through the local stack: the API copies the conversation and the workspace, the fork runs
 * through the deployed state machines on the copy, and the source stays exactly as it was.
 */
import { describe, expect, it } from 'vitest';
import type { RunView } from '../../functions/api/schemas.js';
import { say, use } from '../support/agents.js';
import { useLocalStack } from '../support/local-stack.js';

const local = useLocalStack();

/** What a reader can see of a run: its record, transcript, file list and every file's bytes. */
async function everything(runId: string) {
  const files = (await local.get(`/runs/${runId}/files`)).body.items as { path: string }[];
  const contents = await Promise.all(files.map(async (f) => [f.path, await (await fetch(`${local.stack.url}/runs/${runId}/files/${f.path}`)).text()]));
  return {
    run: (await local.get(`/runs/${runId}`)).body,
    messages: (await local.get(`/runs/${runId}/messages`)).body,
    files,
    contents,
  };
}

describe('POST /runs/{runId}/fork', () => {
  it("runs a fork on the source's first turn and not its second, in a copy of its workspace, and leaves the source unchanged", async () => {
    const session = `fork-${Date.now()}`;
    const tag = local.book.add(
      'fork-source',
      // The session's first run (turn 1), then its second (turn 2), each in a workspace of its own…
      { turn: use(['toolu_a', 'write_file', { path: 'a.md', content: 'one' }]) },
      { turn: say('Done one.') },
      { turn: use(['toolu_b', 'write_file', { path: 'b.md', content: 'two' }]) },
      { turn: say('Done two.') },
      // …then the fork of the second, whose first message is the session's, so the same script answers it.
      { turn: use(['toolu_f', 'edit_file', { path: 'b.md', old_string: 'two', new_string: 'three' }]) },
      { turn: say('Done three.') },
    );
    const first = await local.run(`${tag} Turn one: write a.md.`, { sessionId: session });
    const second = await local.run('Turn two: write b.md.', { sessionId: session });
    expect([first.status, second.status]).toEqual(['succeeded', 'succeeded']);
    const transcript = (await local.get(`/runs/${second.runId}/messages`)).body.items as { seq: number; role: string }[];
    const turnTwo = transcript.find((m) => m.role === 'user')?.seq;
    expect(turnTwo).toBe(4);
    const before = await everything(second.runId);
    const firstBefore = await everything(first.runId);

    const forked = await local.post(`/runs/${second.runId}/fork`, { fromSeq: turnTwo, goal: 'Turn three: change b.md.' });
    expect(forked.status).toBe(202);
    const fork = (await local.waitFor(String(forked.body.runId))) as RunView;
    expect(fork).toMatchObject({
      mode: 'single',
      goal: 'Turn three: change b.md.',
      status: 'succeeded',
      forkedFrom: { runId: second.runId, agent: 'single', seq: 4 },
      result: { response: 'Done three.', actionsTaken: ['edit_file {"path":"b.md","old_string":"two","new_string":"three"}'] },
    });
    expect(fork.sessionId).toBeUndefined();

    // The model was sent turn 1 (the copied messages 0-3) and the fork's goal: nothing of turn 2.
    const requests = local.book.requests.get('fork-source') ?? [];
    expect(requests).toHaveLength(6);
    const sent = requests[4]?.messages ?? [];
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(JSON.stringify(sent[0])).toContain('Turn one: write a.md.');
    expect(JSON.stringify(sent[1])).toContain('toolu_a');
    expect(JSON.stringify(sent[3])).toContain('Done one.');
    expect(JSON.stringify(sent[4])).toContain('Turn three: change b.md.');
    expect(JSON.stringify(sent)).not.toContain('Turn two');
    expect(JSON.stringify(sent)).not.toContain('Done two.');

    // Its workspace began as the source's: the edit found b.md there.
    const mine = await everything(fork.runId);
    expect(mine.contents).toEqual([['b.md', 'three']]);
    expect((mine.messages as { items: { seq: number }[] }).items.map((m) => m.seq)).toEqual([4, 5, 6, 7]);

    expect(await everything(second.runId)).toEqual(before);
    expect(await everything(first.runId)).toEqual(firstBefore);
    expect(before.contents).toEqual([['b.md', 'two']]);
  });

  it('retries a run from its first message once per Idempotency-Key, and refuses a model message naming fromSeq', async () => {
    const tag = local.book.add('fork-retry', { turn: say('First answer.') }, { turn: say('Second answer.') });
    const source = await local.run(`${tag} Answer me.`);
    const refused = await local.post(`/runs/${source.runId}/fork`, { fromSeq: 1 });
    expect(refused).toEqual({
      status: 400,
      body: {
        error: {
          code: 'ValidationFailed',
          message: 'The body is invalid.',
          issues: [{ path: 'fromSeq', message: "names message 1, the model's answer; fork from a user message" }],
        },
      },
    });

    const key = `retry-${Date.now()}`;
    const post = () =>
      fetch(`${local.stack.url}/runs/${source.runId}/fork`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ fromSeq: 0 }),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as { runId: string } }));
    const [a, b] = await Promise.all([post(), post()]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(b.body.runId).toBe(a.body.runId);
    const retried = await local.waitFor(a.body.runId);
    expect((await post()).body.runId).toBe(a.body.runId);
    expect(retried).toMatchObject({ goal: `${tag} Answer me.`, status: 'succeeded', result: { response: 'Second answer.' }, forkedFrom: { runId: source.runId, agent: 'single', seq: 0 } });
    expect(local.stack.runtime.list().filter((e) => e.name === a.body.runId)).toHaveLength(1);
    // The retry was sent the original message again, as the only message: nothing before seq 0 to copy.
    const requests = local.book.requests.get('fork-retry') ?? [];
    expect(requests).toHaveLength(2);
    expect(requests[1]?.messages.map((m) => [m.role, JSON.stringify(m.content).includes('Answer me.')])).toEqual([['user', true]]);
  });
});
