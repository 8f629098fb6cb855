/** The caller's runs, newest first, with a filter by status, and the form that starts a run. */
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ApiClient } from '../api.js';
import { type Capabilities, basicCapabilities, capabilities } from '../capabilities.js';
import type { ConsoleConfig } from '../config.js';
import type { AgentRecord } from '../records.js';
import { ErrorNote, Link, StatusBadge, WaitingBadge, formatCost, formatTime, navigate, runHref, useInterval } from './common.js';

/** A run as `GET /runs` lists it. */
export interface RunSummary {
  runId: string;
  mode: string;
  goal: string;
  status: string;
  phase: string;
  createdAt: string;
  updatedAt: string;
  waitingFor: number;
  estimatedCostUsd: number;
}

/**
 * What an API that cannot list its agents runs (an older deployment's, or one the list did not
 * load from): the built-ins, started by the modes every version takes.
 */
const builtinChoices: Pick<AgentRecord, 'name' | 'kind' | 'description'>[] = [
  { name: 'assistant', kind: 'agent', description: 'One agent, with a calculator and the run\'s workspace of files.' },
  { name: 'plan-and-build', kind: 'workflow', description: 'The Architect plans the work as steps; the Coder carries them out in the workspace.' },
];

/** The choice the form starts with: the assistant, one agent, as before agents were data. */
const defaultChoice = 'agent:assistant';

/**
 * What the form offers to run: the agents, but the built-in Architect and Coder, which work only
 * as the steps of plan-and-build, then the workflows.
 */
export function runChoices(items: readonly Pick<AgentRecord, 'name' | 'kind' | 'description' | 'builtin'>[]) {
  const choices = items.filter((item) => !(item.kind === 'agent' && item.builtin && (item.name === 'architect' || item.name === 'coder')));
  return choices.length ? choices : builtinChoices;
}

/** The body fields that name a choice (`agent:<name>` or `workflow:<name>`): the built-ins by their modes, which every API version takes. */
export function targetFields(choice: string): { mode: 'single' | 'multi' } | { agent: string } | { workflow: string } {
  const [kind, ...rest] = choice.split(':');
  const name = rest.join(':');
  if (kind === 'agent') return name === 'assistant' ? { mode: 'single' } : { agent: name };
  return name === 'plan-and-build' ? { mode: 'multi' } : { workflow: name };
}

const statuses = ['running', 'succeeded', 'failed', 'cancelled'] as const;
type Status = (typeof statuses)[number];

export function RunsPage({ api, config }: { api: ApiClient; config: ConsoleConfig }) {
  return (
    <>
      <h1 tabIndex={-1}>Runs</h1>
      <div class="runs-layout">
        <StartForm api={api} config={config} />
        <RunsList api={api} />
      </div>
    </>
  );
}

function StartForm({ api, config }: { api: ApiClient; config: ConsoleConfig }) {
  const [goal, setGoal] = useState('');
  const [choices, setChoices] = useState<Pick<AgentRecord, 'name' | 'kind' | 'description'>[]>(builtinChoices);
  const [choice, setChoice] = useState(defaultChoice);
  const [gated, setGated] = useState<string[]>([]);
  const [model, setModel] = useState('');
  const [maxUsd, setMaxUsd] = useState('');
  const [maxTokens, setMaxTokens] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [caps, setCaps] = useState<Capabilities>(basicCapabilities);
  useEffect(() => void capabilities(api).then(setCaps), [api]);
  // An API that cannot list its agents keeps the built-ins on offer.
  useEffect(() => void api.agents().then((page) => setChoices(runChoices(page.items)), () => undefined), [api]);

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    if (!goal.trim()) {
      setError(new Error('Write a goal for the run.'));
      return;
    }
    const budget = {
      ...(maxUsd.trim() ? { maxUsd: Number(maxUsd) } : {}),
      ...(maxTokens.trim() ? { maxTokens: Number(maxTokens) } : {}),
    };
    const body = {
      goal,
      ...targetFields(choice),
      ...(gated.length ? { approvals: { tools: gated } } : {}),
      ...(model.trim() ? { model: model.trim() } : {}),
      ...(caps.budget && Object.keys(budget).length ? { budget } : {}),
    };
    setBusy(true);
    try {
      const started = await api.startRun(body);
      navigate(runHref(started.runId));
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };

  const models = config.models ?? [];
  return (
    <section class="panel" aria-labelledby="start-heading">
      <h2 id="start-heading">Start a run</h2>
      <form onSubmit={submit} class="start">
        <label for="goal">Goal</label>
        <textarea id="goal" name="goal" rows={3} required value={goal} onInput={(e) => setGoal(e.currentTarget.value)} />
        <label for="agent">Agent</label>
        <select id="agent" name="agent" value={choice} aria-describedby="agent-about" onChange={(e) => setChoice(e.currentTarget.value)}>
          {(['agent', 'workflow'] as const).map((kind) => (
            <optgroup key={kind} label={kind === 'agent' ? 'Agents' : 'Workflows'}>
              {choices
                .filter((c) => c.kind === kind)
                .map((c) => (
                  <option key={c.name} value={`${kind}:${c.name}`}>
                    {c.name}
                  </option>
                ))}
            </optgroup>
          ))}
        </select>
        <p class="note" id="agent-about">
          {choices.find((c) => `${c.kind}:${c.name}` === choice)?.description}
        </p>
        {config.tools.length > 0 && (
          <fieldset>
            <legend>Tools that wait for approval</legend>
            {config.tools.map((tool) => {
              const always = config.gatedTools.includes(tool);
              return (
                <label class="choice" key={tool}>
                  <input
                    type="checkbox"
                    name="gated"
                    value={tool}
                    checked={always || gated.includes(tool)}
                    disabled={always}
                    onChange={(e) => setGated(e.currentTarget.checked ? [...gated, tool] : gated.filter((t) => t !== tool))}
                  />{' '}
                  <code>{tool}</code>
                  {always ? ' (always, in this deployment)' : ''}
                </label>
              );
            })}
          </fieldset>
        )}
        {models.length > 1 && (
          <>
            <label for="model">Model</label>
            <select id="model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
              <option value="">{models[0]} (default)</option>
              {models.slice(1).map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
            </select>
          </>
        )}
        {config.models === undefined && (
          <>
            <label for="model">Model (optional)</label>
            <input id="model" type="text" value={model} placeholder="the deployment's default" onInput={(e) => setModel(e.currentTarget.value)} />
          </>
        )}
        {caps.budget && (
          <fieldset class="inline">
            <legend>Budget (optional)</legend>
            <div class="field">
              <label for="max-usd">Most US dollars</label>
              <input id="max-usd" type="number" min="0" step="0.01" inputMode="decimal" value={maxUsd} onInput={(e) => setMaxUsd(e.currentTarget.value)} />
            </div>
            <div class="field">
              <label for="max-tokens">Most tokens</label>
              <input id="max-tokens" type="number" min="1" step="1" inputMode="numeric" value={maxTokens} onInput={(e) => setMaxTokens(e.currentTarget.value)} />
            </div>
          </fieldset>
        )}
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Start
          </button>
        </div>
      </form>
    </section>
  );
}

function RunsList({ api }: { api: ApiClient }) {
  const [status, setStatus] = useState<Status | ''>('');
  const [items, setItems] = useState<RunSummary[] | undefined>();
  const [next, setNext] = useState<string | undefined>();
  const [more, setMore] = useState<RunSummary[]>([]);
  const [error, setError] = useState<unknown>();

  const listPage = (cursor?: string) => api.listRuns({ limit: '20', ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) });
  const load = useCallback(() => {
    listPage()
      .then((page) => {
        setItems(page.items);
        setNext((current) => (more.length ? current : page.nextCursor));
        setError(undefined);
      })
      .catch(setError);
  }, [api, status, more.length]);
  useInterval(load, 3_000, [load]);
  useEffect(() => setMore([]), [status]);

  const loadMore = async () => {
    if (!next) return;
    try {
      const after = await listPage(next);
      setMore([...more, ...after.items]);
      setNext(after.nextCursor);
    } catch (e) {
      setError(e);
    }
  };

  const shown = [...(items ?? []), ...more.filter((m) => !items?.some((i) => i.runId === m.runId))];
  return (
    <section class="panel" aria-labelledby="runs-heading">
      <div class="panel-head">
        <h2 id="runs-heading">Your runs</h2>
        <label class="filter">
          Status{' '}
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value as Status | '')}>
            <option value="">All</option>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s[0]?.toUpperCase()}
                {s.slice(1)}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorNote error={error} />
      {items === undefined && !error && <p aria-live="polite">Loading…</p>}
      {items !== undefined && shown.length === 0 && <p>{status ? `No ${status} runs.` : 'No runs yet. Start one above.'}</p>}
      {shown.length > 0 && (
        <table class="runs">
          <thead>
            <tr>
              <th scope="col">Goal</th>
              <th scope="col">Status</th>
              <th scope="col">Phase</th>
              <th scope="col">Cost</th>
              <th scope="col">Started</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((run) => (
              <tr key={run.runId}>
                <td data-label="Goal">
                  <Link href={runHref(run.runId)}>{firstLine(run.goal)}</Link>
                  <span class="mode">{run.mode === 'multi' ? 'Architect + Coder' : 'One agent'}</span>
                </td>
                <td data-label="Status">
                  <StatusBadge status={run.status} /> <WaitingBadge count={run.waitingFor} />
                </td>
                <td data-label="Phase">{run.phase}</td>
                <td data-label="Cost">{formatCost(run.estimatedCostUsd)}</td>
                <td data-label="Started">{formatTime(run.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next && (
        <div class="actions">
          <button type="button" onClick={loadMore}>
            More runs
          </button>
        </div>
      )}
    </section>
  );
}

/** The goal's first line, shortened for a list. */
export function firstLine(goal: string, max = 120): string {
  const line = goal.trim().split('\n')[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line || '(no goal)';
}
