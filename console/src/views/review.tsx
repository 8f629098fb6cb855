/**
 * Deciding a tool call that waits for a reviewer: its tool, its whole input and where in the
 * conversation it came from, with Approve, Deny (with a message to the model) and, where the API
 * takes it, Approve with edited input (checked against the tool's schema before it is sent). The
 * Review page lists every waiting call the caller may decide: its tenant's for reviewers, else its own.
 */
import { useEffect, useState } from 'preact/hooks';
import { type ApiClient, ApiError } from '../api.js';
import { type Capabilities, basicCapabilities, capabilities } from '../capabilities.js';
import { readMessages } from '../follow.js';
import type { MessageRecord, RunRecord } from '../records.js';
import type { Checked } from '../validate.js';
import { ErrorNote, Link, prettyJson, runHref, useInterval } from './common.js';
import { firstLine } from './runs.js';

export interface WaitingCall {
  runId: string;
  toolCallId: string;
  tool: string;
  /** The whole input, as the model wrote it. */
  input: unknown;
  /** Where the call came from: the agent, the message's sequence number, what the model said before it. */
  agent?: string;
  seq?: number;
  said?: string;
  /** Why it waits when the run's policy is not the reason (`egress-after-untrusted`). */
  gate?: string;
}

const agentNames: Record<string, string> = { single: 'The agent', architect: 'The Architect', coder: 'The Coder' };

export function ReviewCard({ api, call, showRun, onDecided }: { api: ApiClient; call: WaitingCall; showRun?: string; onDecided: () => void }) {
  const [caps, setCaps] = useState<Capabilities>(basicCapabilities);
  const [message, setMessage] = useState('');
  const [edited, setEdited] = useState<string | undefined>();
  const [checked, setChecked] = useState<Checked | undefined>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  useEffect(() => void capabilities(api).then(setCaps), [api]);
  useEffect(() => {
    if (edited === undefined) return;
    let current = true;
    void import('../validate.js').then(({ checkToolInput }) => {
      if (current) setChecked(checkToolInput(call.tool, edited));
    });
    return () => {
      current = false;
    };
  }, [edited, call.tool]);

  const headingId = `review-${call.toolCallId}`;
  const decide = async (decision: 'approve' | 'deny', input?: Record<string, unknown>) => {
    setBusy(true);
    setError(undefined);
    const words = message.trim();
    // The API takes a message to the model where it can; otherwise a denial's words are its reason, which the model reads.
    const note = words ? (caps.decisionMessage ? { message: words } : decision === 'deny' ? { reason: words } : {}) : {};
    try {
      await api.decide(call.runId, call.toolCallId, { decision, ...note, ...(input ? { input } : {}) });
      onDecided();
    } catch (e) {
      setError(e);
      // Already decided (by another reviewer, or the timeout): the page catches up.
      if (e instanceof ApiError && e.status === 409) onDecided();
    } finally {
      setBusy(false);
    }
  };

  const where = [
    agentNames[call.agent ?? ''] ?? 'The model',
    call.seq !== undefined ? ` asked in message ${call.seq}` : ' asked',
    showRun ? ' of the run ' : '',
  ].join('');
  return (
    <section class="review" aria-labelledby={headingId}>
      <h3 id={headingId}>
        <code>{call.tool}</code> waits for approval
      </h3>
      {call.gate === 'egress-after-untrusted' && (
        <p class="gate">The run has read untrusted content and this call sends data out: check that the input carries nothing it should not.</p>
      )}
      <p class="where">
        {where}
        {showRun ? <Link href={runHref(call.runId)}>{firstLine(showRun, 80)}</Link> : null}
        {' · '}
        <a href={`${runHref(call.runId)}#call-${encodeURIComponent(call.toolCallId)}`}>see it in the transcript</a>
      </p>
      {call.said && (
        <blockquote class="said">
          <p>{firstLine(call.said, 300)}</p>
        </blockquote>
      )}
      <h4>Input</h4>
      <pre class="input">{prettyJson(call.input)}</pre>
      <label for={`message-${call.toolCallId}`}>Message to the model (optional)</label>
      <textarea id={`message-${call.toolCallId}`} rows={2} value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
      <div class="actions">
        <button type="button" class="primary" disabled={busy} onClick={() => decide('approve')}>
          Approve
        </button>
        <button type="button" class="danger" disabled={busy} onClick={() => decide('deny')}>
          Deny
        </button>
      </div>
      <details
        class="edit"
        onToggle={(e) => {
          // The toggle event comes after the details open, so an edit can come first: keep it.
          if (e.currentTarget.open) setEdited((current) => current ?? prettyJson(call.input));
        }}
      >
        <summary>Edit the input, then approve</summary>
        {caps.decisionInput ? (
          <>
            <label for={`edit-${call.toolCallId}`}>Edited input (JSON)</label>
            <textarea
              id={`edit-${call.toolCallId}`}
              class="code"
              rows={8}
              spellcheck={false}
              value={edited ?? ''}
              aria-describedby={`check-${call.toolCallId}`}
              aria-invalid={checked && !checked.ok ? 'true' : 'false'}
              onInput={(e) => setEdited(e.currentTarget.value)}
            />
            <div id={`check-${call.toolCallId}`} class="check" aria-live="polite">
              {checked && !checked.ok && (
                <ul class="problems">
                  {checked.problems.map((p) => (
                    <li key={p}>{p}</li>
                  ))}
                </ul>
              )}
              {checked?.ok && <p>The input is valid for {call.tool}.</p>}
            </div>
            <div class="actions">
              <button type="button" disabled={busy || !checked?.ok} onClick={() => checked?.ok && decide('approve', checked.value)}>
                Approve with edits
              </button>
            </div>
          </>
        ) : (
          <p>This deployment's API does not take edited input; approve or deny the call as it is.</p>
        )}
      </details>
      <ErrorNote error={error} />
    </section>
  );
}

/** Every call waiting for the caller's decision, across runs. */
export function ReviewPage({ api }: { api: ApiClient }) {
  const [calls, setCalls] = useState<{ run: RunRecord; call: WaitingCall }[] | undefined>();
  const [scope, setScope] = useState<'tenant' | 'mine'>('tenant');
  const [error, setError] = useState<unknown>();
  const [tick, setTick] = useState(0);

  const load = () => {
    void (async () => {
      let page: { items: { runId: string; waitingFor: number }[] };
      let used = scope;
      try {
        page = await api.listRuns({ status: 'running', limit: '100', scope: used });
      } catch (e) {
        // Only reviewers and admins may list their tenant's runs; others review their own.
        if (!(e instanceof ApiError && e.status === 403 && used === 'tenant')) throw e;
        used = 'mine';
        setScope('mine');
        page = await api.listRuns({ status: 'running', limit: '100', scope: 'mine' });
      }
      const found: { run: RunRecord; call: WaitingCall }[] = [];
      for (const item of page.items.filter((i) => i.waitingFor > 0)) {
        const run: RunRecord = await api.getRun(item.runId);
        if (!run.waitingFor?.length) continue;
        const messages = await readMessages(api, item.runId);
        for (const w of run.waitingFor) found.push({ run, call: { ...locate(messages, w.toolUseId), runId: run.runId, toolCallId: w.toolUseId, tool: w.name, input: fullInput(messages, w.toolUseId) ?? w.input, ...(w.gate ? { gate: w.gate } : {}) } });
      }
      setCalls(found);
      setError(undefined);
    })().catch(setError);
  };
  useInterval(load, 3_000, [api, scope, tick]);

  return (
    <>
      <h1 tabIndex={-1}>Review</h1>
      <p>
        {scope === 'tenant'
          ? "Tool calls that wait for a reviewer in your tenant's runs."
          : 'Tool calls that wait for a reviewer in your runs (reviewing other runs needs the approve role).'}
      </p>
      <ErrorNote error={error} />
      {calls === undefined && !error && <p aria-live="polite">Loading…</p>}
      {calls?.length === 0 && <p>Nothing waits for a decision.</p>}
      {calls?.map(({ run, call }) => (
        <ReviewCard key={`${call.runId}/${call.toolCallId}`} api={api} call={call} showRun={run.goal} onDecided={() => setTick((n) => n + 1)} />
      ))}
    </>
  );
}

/** The call's whole input, from the assistant message that made it. */
function fullInput(messages: MessageRecord[], toolUseId: string): unknown {
  for (const m of messages) for (const block of m.content) if (block.type === 'tool_use' && block.id === toolUseId) return block.input;
  return undefined;
}

/** Where a call was made: the agent, the message and the text the model wrote before the call. */
function locate(messages: MessageRecord[], toolUseId: string): Pick<WaitingCall, 'agent' | 'seq' | 'said'> {
  const message = messages.find((m) => m.content.some((block) => block.type === 'tool_use' && block.id === toolUseId));
  if (!message) return {};
  const said = message.content
    .flatMap((block) => (block.type === 'text' ? [block.text] : []))
    .join('\n')
    .trim();
  return { agent: message.agent, seq: message.seq, ...(said ? { said } : {}) };
}
