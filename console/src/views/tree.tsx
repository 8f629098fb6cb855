/**
 * A run's place among the runs its agents started (docs/agents.md, "Agents as tools"): the run
 * that started it, and the tree of child runs below it, each with its agent, status and cost.
 * A child's record is read as the caller reads any run, so a child another caller could not
 * see would show as not found; children are the caller's own (they are owned by the parent's owner).
 */
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ApiClient } from '../api.js';
import { type TreeNode, readTree } from '../tree.js';
import { Link, StatusBadge, formatCost, runHref } from './common.js';

/** Whether any run of the tree is still running (the tree is read again while one is). */
function anyRunning(nodes: readonly TreeNode[]): boolean {
  return nodes.some((node) => node.record?.status === 'running' || anyRunning(node.children));
}

/**
 * The parent link and the child runs' tree of one run; nothing for a run that is neither. The
 * run's record is read here (a page that follows the stream has no record): once, again when the
 * page's status changes, and every few seconds while any run of the tree runs.
 */
export function RunFamily({ api, runId, status }: { api: ApiClient; runId: string; status: string }) {
  const [family, setFamily] = useState<{ parentRunId?: string; nodes: TreeNode[] } | undefined>();
  const load = useCallback(async () => {
    try {
      const record = await api.getRun(runId);
      setFamily({ ...(record.parentRunId ? { parentRunId: record.parentRunId } : {}), nodes: await readTree(api, record.children) });
    } catch {
      // The page itself says when the run cannot be read.
    }
  }, [api, runId]);
  const live = status === 'running' || (family !== undefined && anyRunning(family.nodes));
  useEffect(() => {
    void load();
    if (!live) return;
    const timer = setInterval(() => document.visibilityState === 'visible' && void load(), 3_000);
    return () => clearInterval(timer);
  }, [load, live, status]);

  if (!family || (!family.parentRunId && !family.nodes.length)) return null;
  return (
    <section class="panel family" aria-labelledby="family-heading">
      <h2 id="family-heading">Runs of this run’s agents</h2>
      {family.parentRunId && (
        <p>
          Started by a call of an agent in run <Link href={runHref(family.parentRunId)}>{family.parentRunId}</Link>.
        </p>
      )}
      {family.nodes.length > 0 && <Tree nodes={family.nodes} label="Child runs" />}
    </section>
  );
}

function Tree({ nodes, label }: { nodes: readonly TreeNode[]; label?: string }) {
  return (
    <ul class="tree" aria-label={label}>
      {nodes.map((node) => (
        <li key={node.runId}>
          <span class="tree-run">
            <span class="agent">{node.agent}</span> <Link href={runHref(node.runId)}>{node.runId}</Link>{' '}
            {node.record ? (
              <>
                <StatusBadge status={node.record.status} /> <span class="cost">{formatCost(node.record.estimatedCostUsd)}</span>
              </>
            ) : (
              node.missing && <span class="note">not found</span>
            )}
          </span>
          {node.children.length > 0 && <Tree nodes={node.children} />}
        </li>
      ))}
    </ul>
  );
}
