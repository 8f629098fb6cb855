/**
 * The tree of child runs below a run (docs/agents.md, "Agents as tools"), read from each run's
 * `children` as the caller reads any run. No DOM: the unit tests run it on Node.
 */
import type { ApiClient } from './api.js';
import type { RunRecord } from './records.js';

/** One child run as the tree shows it: its record once read, and its own children. */
export interface TreeNode {
  runId: string;
  agent: string;
  record?: Pick<RunRecord, 'status' | 'estimatedCostUsd' | 'goal'>;
  missing?: boolean;
  children: TreeNode[];
}

type Children = RunRecord['children'];

/** The runs a run's `children` names, in the order their calls were made (the record keys them by tool call). */
export function childrenOf(children: Children): { runId: string; agent: string }[] {
  return Object.values(children ?? {});
}

/**
 * Reads the tree below a run: each child's record, then its children, breadth first, at most
 * `maxRuns` records in all (nesting is at most 3 deep, and a run calls few agents).
 */
export async function readTree(api: Pick<ApiClient, 'getRun'>, children: Children, maxRuns = 50): Promise<TreeNode[]> {
  let budget = maxRuns;
  const grow = async (of: Children): Promise<TreeNode[]> => {
    const nodes = childrenOf(of).slice(0, Math.max(0, budget));
    budget -= nodes.length;
    return Promise.all(
      nodes.map(async ({ runId, agent }): Promise<TreeNode> => {
        try {
          const record = await api.getRun(runId);
          return { runId, agent, record, children: await grow(record.children) };
        } catch {
          return { runId, agent, missing: true, children: [] };
        }
      }),
    );
  };
  return grow(children);
}

