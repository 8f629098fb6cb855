/** The event stream's reads on the DynamoDB and S3 emulators: the adapters give the stream what the in-memory store does. */
import { Documents } from '../../functions/adapters/dynamo/documents.js';
import { describe, expect, it } from 'vitest';
import { DynamoLiveText } from '../../functions/adapters/dynamo/live-text.js';
import { DynamoConversationStore } from '../../functions/adapters/dynamo/conversations.js';
import { DynamoRunStore } from '../../functions/adapters/dynamo/runs.js';
import { DynamoToolCatalogStore } from '../../functions/adapters/dynamo/tool-catalog.js';
import { BlobStore } from '../../functions/adapters/s3/blobs.js';
import { seqKey } from '../../functions/core/conversation/conversation.js';
import type { LiveAttempt } from '../../functions/core/live/types.js';
import type { Run } from '../../functions/core/runs/types.js';
import { RunEventReader } from '../../functions/core/stream/reader.js';
import { type RunEventSources } from '../../functions/core/stream/types.js';
import { awsClients, readEnv } from '../../functions/wiring/wire.js';
import { newRun } from '../support/memory.js';
import { useLocalAws } from '../support/local-aws.js';
import { readAll, scenario, worldOf } from '../support/stream-world.js';

const aws = useLocalAws();
const clients = () => {
  const env = readEnv(aws.env);
  const { dynamo, s3 } = awsClients(env);
  const doc = new Documents(dynamo);
  return { doc, table: env.STEPWISE_TABLE, blobs: new BlobStore(s3, env.STEPWISE_BUCKET) };
};
const attempt = (runId: string, agent: 'single' | 'architect', seq: number, id: string, text: string): LiveAttempt => ({
  runId, agent, seq, attempt: id, chunks: [{ block: 0, kind: 'text', delta: text }], updatedAt: '2026-01-01T00:00:00.000Z',
});

describe('the stream\'s reads on DynamoDB', () => {
  it('reads a conversation from a message or from a result on: this run\'s messages and every result, large bodies included', async () => {
    const { doc, table, blobs } = clients();
    const store = new DynamoConversationStore({ doc, table, blobs, inlineLimitBytes: 1000 });
    const id = `conv-stream-${Date.now()}`;
    const mine = { runId: 'run-b', iteration: 0 };
    await store.append(id, { seq: 0, role: 'user', content: [{ type: 'text', text: 'old' }], meta: { runId: 'run-a', iteration: 0 } });
    await store.append(id, { seq: 1, role: 'user', content: [{ type: 'text', text: 'x'.repeat(5000) }], meta: mine });
    await store.append(id, { seq: 2, role: 'assistant', content: [{ type: 'tool_use', id: 't0', name: 'calculator', input: {} }, { type: 'tool_use', id: 't1', name: 'calculator', input: {} }], meta: mine });
    await store.putResult(id, 2, 1, { type: 'tool_result', tool_use_id: 't1', content: '1' }, { ran: false });
    await store.putResult(id, 2, 0, { type: 'tool_result', tool_use_id: 't0', content: '0' });
    await store.putCompaction(id, { fromSeq: 1, atSeq: 2, summary: 's', runId: 'run-b', iteration: 0, usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 }, model: 'm' });

    const all = await store.itemsFrom(id, { seq: 0 }, 'run-b');
    expect(all.map((r) => (r.kind === 'message' ? `m${r.seq}` : r.kind === 'result' ? `r${r.seq}.${r.index}${r.ran === false ? ' not run' : ''}` : r.kind))).toEqual(['m1', 'm2', 'r2.0', 'r2.1 not run']);
    expect(all[0]).toMatchObject({ kind: 'message', content: [{ type: 'text', text: 'x'.repeat(5000) }] });
    expect((await store.itemsFrom(id, { seq: 2, result: 1 }, 'run-b')).map((r) => r.kind)).toEqual(['result']);
    expect(await store.itemsFrom(id, { seq: 3 }, 'run-b')).toEqual([]);
  });

  it('reads the run record and its approvals in one query, without the tool catalog or the task token', async () => {
    const { doc, table, blobs } = clients();
    const runs = new DynamoRunStore({ doc, table, blobs });
    const runId = `run-p-${Date.now()}`;
    await runs.create(newRun(runId, 'g'.repeat(40_000)));
    await new DynamoToolCatalogStore(doc, table, blobs).putCatalog(runId, { tools: [], unavailable: [], listedAt: '2026-01-01T00:00:00.000Z' });
    await doc.put({ TableName: table, Item: { pk: `run#${runId}`, sk: 'approval#toolu_1', runId, toolUseId: 'toolu_1', agent: 'single', conversationId: 'c', seq: 1, name: 'write_file', input: { path: 'a' }, requestedAt: 't', token: 'secret-token', decision: 'deny', decidedBy: 'rita', decidedAt: 'u', message: 'Use b.md' } });
    aws.emulators.requests.reset();
    const { run, approvals } = await runs.getWithApprovals(runId);
    expect((await aws.emulators.requests.snapshot()).dynamo).toEqual({ Query: 1 });
    expect(run?.goal).toBe('g'.repeat(40_000));
    expect(run?.status).toBe('running');
    expect(approvals).toEqual([{ runId, toolUseId: 'toolu_1', agent: 'single', conversationId: 'c', seq: 1, name: 'write_file', input: { path: 'a' }, requestedAt: 't', decision: 'deny', decidedBy: 'rita', decidedAt: 'u', message: 'Use b.md' }]);
    expect(await runs.getWithApprovals('no-such-run')).toEqual({ run: undefined, approvals: [] });
  });

  it('reads an agent\'s live attempts from a seq, or from an attempt of it, in key order', async () => {
    const { doc, table } = clients();
    const live = new DynamoLiveText(doc, table);
    const runId = `run-l-${Date.now()}`;
    const items = [attempt(runId, 'single', 1, '1767225600001-aaaaaa', 'a'), attempt(runId, 'single', 1, '1767225600002-bbbbbb', 'b'), attempt(runId, 'single', 12, '1767225600003-cccccc', 'c'), attempt(runId, 'architect', 1, '1767225600004-dddddd', 'd')];
    for (const item of items) await doc.put({ TableName: table, Item: { pk: `live#${runId}`, sk: `${item.agent}#${seqKey(item.seq)}#${item.attempt}`, ...item } });
    const texts = (list: LiveAttempt[]) => list.map((a) => (a.chunks[0] as { delta: string }).delta);
    expect(texts(await live.list(runId, { agent: 'single', seq: 0 }))).toEqual(['a', 'b', 'c']);
    expect(texts(await live.list(runId, { agent: 'single', seq: 1, attempt: '1767225600002-bbbbbb' }))).toEqual(['b', 'c']);
    expect(texts(await live.list(runId, { agent: 'single', seq: 2 }))).toEqual(['c']);
    expect(await live.list(runId, { agent: 'architect', seq: 0 })).toEqual([items[3]]);
  });

  it('gives the same stream on DynamoDB as on the store in memory, for generated runs', async () => {
    const { doc, table, blobs } = clients();
    const conversations = new DynamoConversationStore({ doc, table, blobs });
    const runs = new DynamoRunStore({ doc, table, blobs });
    const sources = aws.wiring().events;
    for (let seed = 1; seed <= 12; seed++) {
      const runId = `run-s${seed}-${Date.now()}`;
      const world = worldOf(scenario(seed, { runId }));
      world.settle();
      // The finished store, written through the adapters.
      await runs.create(world.run);
      for (const [conversationId, items] of world.conversations) {
        for (const record of items.values()) {
          if (record.kind === 'message') await conversations.append(conversationId, { seq: record.seq, role: record.role, content: record.content, meta: record.meta });
          if (record.kind === 'result') await conversations.putResult(conversationId, record.seq, record.index, record.result, record.ran === false ? { ran: false } : {});
        }
      }
      for (const approval of world.approvals.values()) await doc.put({ TableName: table, Item: { pk: `run#${runId}`, sk: `approval#${approval.toolUseId}`, ...approval } });
      for (const item of world.live.values()) await doc.put({ TableName: table, Item: { pk: `live#${runId}`, sk: `${item.agent}#${seqKey(item.seq)}#${item.attempt}`, ...item } });
      const stored = (await runs.get(runId)) ?? world.run;
      const onDynamo = await readAllWith(sources, stored);
      expect(onDynamo).toEqual(await readAll(world));
    }
  });
});

/** The whole stream of a run that has ended, read through `sources`. */
async function readAllWith(sources: RunEventSources, run: Run) {
  const reader = new RunEventReader(sources, run);
  const events = [];
  for (let i = 0; i < 1000; i++) {
    const result = await reader.tick();
    events.push(...result.events);
    if (result.done) return events;
  }
  throw new Error('The stream did not end.');
}
