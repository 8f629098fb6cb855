/**
 * The Evals page (docs/evals.md, "Deployed"): the caller's eval reports, newest first; pick two
 * to see them side by side, per case each report's status, cost and model calls, regressions
 * marked (the rows: `eval-compare.ts`).
 */
import { useEffect, useState } from 'preact/hooks';
import type { ApiClient } from '../api.js';
import { type CompareRow, compareRows, type Side } from '../eval-compare.js';
import type { EvalReport } from '../../../functions/core/evals/types.js';
import { ErrorNote } from './common.js';

type Listed = Awaited<ReturnType<ApiClient['listEvals']>>['items'][number];

const sideText = (side: Side) => (side ? `${side.status.toUpperCase()} · $${side.costUsd.toFixed(4)} · ${side.iterations} calls` : '—');

function Comparison({ rows }: { rows: CompareRow[] }) {
  return (
    <table>
      <caption>Cases side by side</caption>
      <thead>
        <tr>
          <th scope="col">Case</th>
          <th scope="col">Earlier</th>
          <th scope="col">Later</th>
          <th scope="col">Change</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.caseId} class={row.change === 'regression' ? 'regression' : undefined}>
            <th scope="row">{row.caseId}</th>
            <td>{sideText(row.before)}</td>
            <td>{sideText(row.after)}</td>
            <td>
              {row.change === 'regression' ? <strong>Regression</strong> : row.change === 'fixed' ? 'Fixed' : ''}
              {row.grew.length ? ` (${row.grew.join(' and ')} grew)` : ''}
              {row.details.map((d) => (
                <div key={d}>{d}</div>
              ))}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function EvalsPage({ api }: { api: ApiClient }) {
  const [items, setItems] = useState<Listed[]>([]);
  const [picked, setPicked] = useState<string[]>([]);
  const [reports, setReports] = useState<EvalReport[]>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => void api.listEvals().then((page) => setItems(page.items), setError), [api]);
  useEffect(() => {
    if (picked.length !== 2) return setReports([]);
    // The earlier eval on the left.
    const ordered = [...picked].sort();
    void Promise.all(ordered.map((id) => api.getEval(id))).then((views) => setReports(views.flatMap((v) => (v.report ? [v.report] : []))), setError);
  }, [api, picked]);
  const toggle = (evalId: string) => setPicked((now) => (now.includes(evalId) ? now.filter((id) => id !== evalId) : [...now, evalId].slice(-2)));
  const [before, after] = reports;
  return (
    <>
      <h1 tabIndex={-1}>Evals</h1>
      {error !== undefined && <ErrorNote error={error} />}
      {!items.length ? (
        <p>No evals yet: start one with POST /evals.</p>
      ) : (
        <ul class="evals">
          {items.map((item) => (
            <li key={item.evalId}>
              <label>
                <input type="checkbox" checked={picked.includes(item.evalId)} disabled={item.status !== 'succeeded'} onChange={() => toggle(item.evalId)} /> {item.name} ·{' '}
                {item.createdAt} · {item.status}
                {item.summary ? ` · ${item.summary.passed} passed, ${item.summary.failed} failed, ${item.summary.errored} errors of ${item.summary.total}` : ''}
              </label>
            </li>
          ))}
        </ul>
      )}
      {before && after ? <Comparison rows={compareRows(before, after)} /> : <p>Pick two finished evals to compare them.</p>}
    </>
  );
}
