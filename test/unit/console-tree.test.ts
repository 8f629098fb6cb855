/**
 * The console's tree of child runs (console/src/tree.ts): read breadth first from each
 * run's `children`, a child the caller cannot read shown as not found, and a bound on the reads.
 */
import { describe, expect, it } from 'vitest';
import { childrenOf, readTree } from '../../console/src/tree.js';
import { ApiError } from '../../console/src/api.js';

type Record = { status: string; estimatedCostUsd: number; goal: string; children?: { [toolUseId: string]: { runId: string; agent: string } } };

function api(records: { [runId: string]: Record }) {
  const reads: string[] = [];
  return {
    reads,
    getRun: async (runId: string) => {
      reads.push(runId);
      const record = records[runId];
      if (!record) throw new ApiError(404, 'RunNotFound', `Run ${runId} not found.`);
      return { runId, ...record } as never;
    },
  };
}

const run = (status: string, children?: Record['children']): Record => ({ status, estimatedCostUsd: 0.01, goal: 'g', ...(children ? { children } : {}) });

describe('the tree of child runs', () => {
  it('reads each child and its own children, keeping the order of the calls', async () => {
    const reader = api({
      a: run('succeeded', { toolu_3: { runId: 'a1', agent: 'helper' } }),
      b: run('running'),
      a1: run('failed'),
    });
    const tree = await readTree(reader, { toolu_1: { runId: 'a', agent: 'lead' }, toolu_2: { runId: 'b', agent: 'helper' } });
    expect(tree).toMatchObject([
      { runId: 'a', agent: 'lead', record: { status: 'succeeded' }, children: [{ runId: 'a1', agent: 'helper', record: { status: 'failed' }, children: [] }] },
      { runId: 'b', agent: 'helper', record: { status: 'running' }, children: [] },
    ]);
    expect(childrenOf(undefined)).toEqual([]);
  });

  it('shows a child it cannot read as not found, and reads no more runs than its bound', async () => {
    const reader = api({ a: run('succeeded', { t1: { runId: 'a1', agent: 'x' }, t2: { runId: 'a2', agent: 'x' } }), a1: run('succeeded'), a2: run('succeeded') });
    const tree = await readTree(reader, { t0: { runId: 'gone', agent: 'x' }, t1: { runId: 'a', agent: 'x' } }, 3);
    expect(tree[0]).toEqual({ runId: 'gone', agent: 'x', missing: true, children: [] });
    expect(tree[1]?.children.map((c) => c.runId)).toEqual(['a1']);
    expect(reader.reads.sort()).toEqual(['a', 'a1', 'gone']);
  });
});
