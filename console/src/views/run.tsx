/**
 * One run: its goal and state, the calls that wait for a reviewer, the phases and plan of a
 * multi-agent run, the transcript as it happens, the workspace's files, usage and cost, and Cancel.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ApiClient, ApiError } from '../api.js';
import { type FollowMode, type RunFollower, followRun } from '../follow.js';
import { renderMarkdown } from '../markdown.js';
import type { RunRecord } from '../records.js';
import { type DefinitionRef, type ToolItem, type Transcript, inputOf, statusOf, waitingCalls } from '../transcript.js';
import { ErrorNote, Link, StatusBadge, formatCost, formatCount, formatTime, prettyJson } from './common.js';
import { FilesPanel } from './files.js';
import { MemoryPanel } from './memory.js';
import { ReviewCard, type WaitingCall } from './review.js';
import { firstLine } from './runs.js';
import { TranscriptView } from './transcript.js';
import { RunFamily } from './tree.js';
import { TimelinePanel } from './timeline.js';

const agentWords: Record<string, string> = { single: 'The agent', architect: 'The Architect', coder: 'The Coder' };

const phaseSteps = [
  { phase: 'planning', label: 'Planning', agent: 'Architect' },
  { phase: 'executing', label: 'Executing', agent: 'Coder' },
  { phase: 'complete', label: 'Complete', agent: '' },
];

export function RunPage({ api, runId }: { api: ApiClient; runId: string }) {
  const [t, setT] = useState<Transcript | undefined>();
  const [record, setRecord] = useState<RunRecord | undefined>();
  const [mode, setMode] = useState<FollowMode>({ kind: 'connecting' });
  const [error, setError] = useState<ApiError | undefined>();
  const [actionError, setActionError] = useState<unknown>();
  const [cancelling, setCancelling] = useState(false);
  const follower = useRef<RunFollower | undefined>(undefined);

  useEffect(() => {
    const f = followRun(
      api,
      runId,
      { onTranscript: setT, onRecord: setRecord, onMode: setMode, onError: setError },
      { schedule: (redraw) => requestAnimationFrame(() => redraw()) },
    );
    follower.current = f;
    return () => f.stop();
  }, [api, runId]);

  // The browser scrolls to a call named in the address (#call-…) once the transcript shows it.
  const scrolled = useRef(false);
  useEffect(() => {
    if (scrolled.current || !t || !location.hash.startsWith('#call-')) return;
    const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target) {
      scrolled.current = true;
      target.scrollIntoView();
    }
  }, [t]);

  if (error) {
    const missing = error.status === 404;
    return (
      <>
        <h1 tabIndex={-1}>{missing ? 'Run not found' : 'This run cannot be shown'}</h1>
        <ErrorNote>{missing ? `There is no run ${runId}, or it is not yours to see.` : error.message}</ErrorNote>
        <p>
          <Link href="/console/">Back to your runs</Link>
        </p>
      </>
    );
  }

  const goal = t?.run?.goal ?? record?.goal;
  const status = record?.status ?? (t ? statusOf(t) : 'running');
  const running = status === 'running';
  const usage = t?.ended?.usage ?? record?.usage ?? t?.usage;
  const cost = t?.ended?.estimatedCostUsd ?? record?.estimatedCostUsd ?? t?.costUsd;
  const phase = t?.ended?.phase ?? record?.phase ?? t?.phase;
  const runMode = t?.run?.mode ?? record?.mode;
  const follows = followsOf({ mode: runMode, agent: t?.run?.agent ?? record?.agent, workflow: t?.run?.workflow ?? record?.workflow });
  const agent = running ? t?.sections.at(-1)?.agent : undefined;
  const failure: { code: string; message: string; agent?: string } | undefined =
    t?.ended?.error ?? record?.error ?? (t?.finished?.outcome === 'failed' ? { code: t.finished.code ?? 'Failed', message: t.finished.message ?? '' } : undefined);
  const answer = t?.ended?.result?.response ?? record?.result?.response;
  const results = t ? t.sections.reduce((n, s) => n + s.items.filter((i) => i.kind === 'tool' && i.result).length, 0) : 0;

  const cancel = async () => {
    setCancelling(true);
    setActionError(undefined);
    try {
      await api.cancelRun(runId);
      follower.current?.refresh();
    } catch (e) {
      setActionError(e);
    } finally {
      setCancelling(false);
    }
  };

  return (
    <>
      <div class="run-head">
        <h1 tabIndex={-1}>{goal ? firstLine(goal) : `Run ${runId}`}</h1>
        {running && (
          <button type="button" class="danger" onClick={cancel} disabled={cancelling || !t}>
            Cancel
          </button>
        )}
      </div>
      {goal && firstLine(goal) !== goal.trim() && (
        <details class="goal">
          <summary>The whole goal</summary>
          <p class="goal-text">{goal}</p>
        </details>
      )}
      <ErrorNote error={actionError} />
      <dl class="facts">
        <div>
          <dt>Status</dt>
          <dd>
            <StatusBadge status={status} />
          </dd>
        </div>
        <div>
          <dt>Phase</dt>
          <dd>{phase ?? '—'}</dd>
        </div>
        <div>
          <dt>{follows.term}</dt>
          <dd>
            {follows.name}
            {follows.version && (
              <>
                {' '}
                <span class="version">
                  version <code>{follows.version}</code>
                </span>
              </>
            )}
          </dd>
        </div>
        {agent && (
          <div>
            <dt>Working</dt>
            <dd>{agentWords[agent] ?? agent}</dd>
          </div>
        )}
        <div>
          <dt>Tokens</dt>
          <dd>
            {usage
              ? `${formatCount(usage.inputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens)} in · ${formatCount(usage.outputTokens)} out`
              : '—'}
          </dd>
        </div>
        <div>
          <dt>Estimated cost</dt>
          <dd>{formatCost(cost)}</dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>{formatTime(t?.run?.createdAt ?? record?.createdAt)}</dd>
        </div>
      </dl>
      <p class="live" aria-live="polite">
        {liveWords(mode, running, status)}
      </p>

      {t && <Waiting api={api} runId={runId} t={t} onDecided={() => follower.current?.refresh()} />}

      {failure && (
        <div class="run-error" role="alert">
          <p>
            <strong>{failure.code}</strong>
            {failure.agent ? ` (${failure.agent})` : ''}: {failure.message}
          </p>
        </div>
      )}
      {answer !== undefined && status === 'succeeded' && <Answer text={answer} />}

      <RunFamily api={api} runId={runId} status={status} />
      {runMode === 'multi' && <Phases phase={phase} />}
      {t?.plan !== undefined && <PlanView plan={t.plan} />}
      <TimelinePanel api={api} runId={runId} status={status} />

      <div class="run-body">
        <section class="panel transcript-panel" aria-labelledby="transcript-heading">
          <h2 id="transcript-heading">Transcript</h2>
          {t ? <TranscriptView t={t} running={running} /> : <p>Loading…</p>}
        </section>
        <FilesPanel api={api} runId={runId} revision={results + (running ? 0 : 1)} />
        {t && <MemoryPanel t={t} />}
      </div>
    </>
  );
}

/** What a run follows, for its facts: its agent or workflow and the version it started with; a run made before agents were data, by its mode. */
function followsOf(run: { mode?: string | undefined; agent?: DefinitionRef | undefined; workflow?: DefinitionRef | undefined }): { term: string; name: string; version?: string } {
  if (run.agent) return { term: 'Agent', ...run.agent };
  if (run.workflow) return { term: 'Workflow', ...run.workflow };
  return { term: 'Agents', name: run.mode === 'multi' ? 'Architect + Coder' : run.mode === 'single' ? 'One agent' : '—' };
}

function liveWords(mode: FollowMode, running: boolean, status: string): string {
  if (!running) return `The run ${status}.`;
  switch (mode.kind) {
    case 'connecting':
      return 'Connecting…';
    case 'stream':
      return mode.connection === 'open' ? 'Live.' : 'Reconnecting…';
    case 'polling':
      return 'Updated every second.';
  }
}

function Answer({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return (
    <section class="panel answer" aria-labelledby="answer-heading">
      <h2 id="answer-heading">Answer</h2>
      <div class="markdown" dangerouslySetInnerHTML={html} />
    </section>
  );
}

/** The calls of this run that wait for a decision, each with its context in the conversation. */
function Waiting({ api, runId, t, onDecided }: { api: ApiClient; runId: string; t: Transcript; onDecided: () => void }) {
  const calls = waitingCalls(t);
  if (!calls.length) return null;
  return (
    <section class="panel waiting-panel" aria-labelledby="waiting-heading">
      <h2 id="waiting-heading">{calls.length === 1 ? 'A tool call waits for your decision' : `${calls.length} tool calls wait for your decision`}</h2>
      {calls.map((call) => (
        <ReviewCard key={call.id} api={api} call={waitingCall(runId, t, call)} onDecided={onDecided} />
      ))}
    </section>
  );
}

function waitingCall(runId: string, t: Transcript, call: ToolItem & { agent: string }): WaitingCall {
  // The parent is the message (`<runId>:<agent>:<seq>`) or its text before the call (`…:<seq>:<block>`).
  const message = call.parentMessageId?.split(':').slice(0, 3) ?? [];
  const seq = Number(message[2]);
  const prefix = `${message.join(':')}:`;
  const said = t.sections
    .flatMap((s) => s.items)
    .filter((i) => i.kind === 'text' && i.id.startsWith(prefix))
    .map((i) => (i.kind === 'text' ? i.text : ''))
    .join('\n')
    .trim();
  return {
    runId,
    toolCallId: call.id,
    tool: call.name,
    // The transcript has the whole input; the request may carry a shortened copy.
    input: inputOf(call) ?? call.approval?.input,
    agent: call.agent,
    ...(call.approval?.gate ? { gate: call.approval.gate } : {}),
    ...(Number.isInteger(seq) ? { seq } : {}),
    ...(said ? { said } : {}),
  };
}

function Phases({ phase }: { phase: string | undefined }) {
  const at = phaseSteps.findIndex((s) => s.phase === phase);
  return (
    <nav class="phases" aria-label="Phases">
      <ol>
        {phaseSteps.map((step, i) => (
          <li key={step.phase} class={i < at ? 'done' : i === at ? 'current' : ''} aria-current={i === at ? 'step' : undefined}>
            {step.label}
            {step.agent ? <span class="who"> · {step.agent}</span> : null}
            {i < at ? <span class="sr-only"> (done)</span> : null}
          </li>
        ))}
        {phase === 'failed' || phase === 'cancelled' ? <li class="current" aria-current="step">{phase === 'failed' ? 'Failed' : 'Cancelled'}</li> : null}
      </ol>
    </nav>
  );
}

interface PlanStep {
  description?: string;
  action?: string;
  parameters?: unknown;
}

function PlanView({ plan }: { plan: unknown }) {
  const p = (typeof plan === 'object' && plan !== null ? plan : {}) as { goal?: string; steps?: PlanStep[] };
  return (
    <section class="panel plan" aria-labelledby="plan-heading">
      <h2 id="plan-heading">Plan</h2>
      {p.goal && <p>{p.goal}</p>}
      <ol>
        {(p.steps ?? []).map((step, i) => (
          <li key={i}>
            {step.description}
            {step.action ? (
              <>
                {' '}
                <code>{step.action}</code>
              </>
            ) : null}
            {step.parameters !== undefined ? <pre class="params">{prettyJson(step.parameters)}</pre> : null}
          </li>
        ))}
      </ol>
    </section>
  );
}
